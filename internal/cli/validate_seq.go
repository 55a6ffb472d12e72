package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/skillbus/skillbus/pkg/seq"
)

// validateSequenceFile parses and validates one sequence file with pkg/seq
// (by extension: *.seq.json is the JSON form, *.seq.yaml / *.seq.yml the
// YAML form). It returns one Problem per problem found, each reading
// `group N "name": message` when it is about a group, and, when the file is
// valid, the summary `sequence NAME (ARG: TYPE, ...)`: its signature.
func validateSequenceFile(path string) ([]Problem, string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return []Problem{{File: path, Message: "cannot read the file: " + err.Error()}}, ""
	}
	s, err := seq.ParseFile(path, data)
	if err != nil {
		var errs seq.Errors
		if errors.As(err, &errs) {
			probs := make([]Problem, len(errs))
			for i, e := range errs {
				probs[i] = Problem{File: path, Message: e.Error()}
			}
			return probs, ""
		}
		return []Problem{{File: path, Message: err.Error()}}, ""
	}
	var probs []Problem
	if enc, err := seq.Encode(s); err == nil && len(enc) > defaultMaxPayload {
		probs = append(probs, Problem{File: path, Warning: true, Message: fmt.Sprintf(
			"the stored form of this sequence is %d bytes, more than the %d bytes (1 MiB) a NATS server accepts in one message by default: "+
				"the registry cannot store it unless the server's max_payload is raised; split it into smaller sequences", len(enc), defaultMaxPayload)})
	}
	return probs, "sequence " + s.Name + " " + s.Signature.String()
}

// defaultMaxPayload is nats-server's default max_payload (1 MiB): the
// largest message, and so the largest stored sequence, a default server
// accepts.
const defaultMaxPayload = 1 << 20
