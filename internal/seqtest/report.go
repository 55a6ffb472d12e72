package seqtest

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// Kinds of test file (Result.Kind): a sequence's NAME.test.yaml
// (internal/seqtest) or a skill's skill.test.yaml (internal/skilltest).
const (
	KindSequence = ""
	KindSkill    = "skill"
)

// Summary is the machine form of a whole `skillbus test` (-o json).
type Summary struct {
	Results []Result `json:"results"`
	Passed  int      `json:"passed"`
	Failed  int      `json:"failed"`
	// Errors are test files that do not parse ("FILE:LINE: message").
	Errors []string `json:"errors,omitempty"`
}

// Add counts r.
func (s *Summary) Add(r Result) {
	s.Results = append(s.Results, r)
	if r.Passed {
		s.Passed++
	} else {
		s.Failed++
	}
}

// WriteFailure prints one failing case: its failures (expected and actual)
// and the run's trace (for a skill test, the assembly: each skill's
// outcome and reasons, the tool surface).
func WriteFailure(w io.Writer, r Result) {
	fmt.Fprintf(w, "--- FAIL: %s:%d: %s\n", r.File, r.Line, r.Case)
	for _, f := range r.Failures {
		fmt.Fprintf(w, "  %s\n", f)
	}
	if len(r.Trace) > 0 {
		title := "trace (virtual time)"
		if r.Kind == KindSkill {
			title = "assembly"
		}
		fmt.Fprintf(w, "  %s:\n", title)
		for _, t := range r.Trace {
			fmt.Fprintf(w, "    %s\n", t)
		}
	}
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Error     *junitFailure `xml:"error,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes s as JUnit XML: one testsuite per test file, one
// testcase per case (a file that does not parse is a testcase with an error).
func WriteJUnit(w io.Writer, s *Summary) error {
	var out junitSuites
	idx := map[string]int{}
	suite := func(file string) *junitSuite {
		i, ok := idx[file]
		if !ok {
			i = len(out.Suites)
			idx[file] = i
			out.Suites = append(out.Suites, junitSuite{Name: file})
		}
		return &out.Suites[i]
	}
	for _, r := range s.Results {
		st := suite(r.File)
		c := junitCase{Name: r.Case, Classname: r.File, Time: fmt.Sprintf("%.3f", r.Wall.Seconds())}
		if !r.Passed {
			var b strings.Builder
			WriteFailure(&b, r)
			c.Failure = &junitFailure{Message: strings.SplitN(r.Failures[0], "\n", 2)[0], Text: b.String()}
			st.Failures++
		}
		st.Tests++
		st.Cases = append(st.Cases, c)
	}
	for _, e := range s.Errors {
		file, _, _ := strings.Cut(e, ":")
		st := suite(file)
		st.Tests++
		st.Errors++
		st.Cases = append(st.Cases, junitCase{Name: "parse", Classname: file, Time: "0", Error: &junitFailure{Message: e, Text: e}})
	}
	for i := range out.Suites {
		out.Suites[i].Time = "0"
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
