package seq

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestJSONKindFastPathAgrees checks that JSONKind's shortcut for plain
// integers (plainInt) names every input as the full parse does.
func TestJSONKindFastPathAgrees(t *testing.T) {
	slow := func(b []byte) string {
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return "invalid JSON"
		}
		if i, ok := exactInt(string(n)); ok && i.IsInt64() {
			return "integer"
		}
		return "number"
	}
	cases := []string{"0", "-0", "7", "-7", "01", "-01", "00", "-", "123456789012345678", "-999999999999999999",
		"1234567890123456789", "9223372036854775807", "9223372036854775808", "1.0", "1e3", "--1", "1-", "+1"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		n := r.IntN(21) + 1
		b := make([]byte, 0, n+1)
		if r.IntN(3) == 0 {
			b = append(b, '-')
		}
		for range n {
			b = append(b, "0123456789"[r.IntN(10)])
		}
		cases = append(cases, string(b), strconv.FormatInt(r.Int64(), 10))
	}
	for _, c := range cases {
		if plainInt([]byte(c)) {
			if got := slow([]byte(c)); got != "integer" {
				t.Fatalf("plainInt(%q) is true, but the full parse says %s", c, got)
			}
		}
		if got, want := JSONKind(json.RawMessage(c)), slow([]byte(c)); got != want {
			t.Fatalf("JSONKind(%q) = %s, the full parse says %s", c, got, want)
		}
	}
}
