package cli

// validateSequenceFile parses and validates one sequence file with pkg/seq.
// It returns the problems found and, when valid, a one-line summary holding
// the sequence's name and signature. (Owned by the sequence-language work.)
func validateSequenceFile(path string) ([]Problem, string) {
	return []Problem{{File: path, Message: "sequence validation not implemented yet"}}, ""
}
