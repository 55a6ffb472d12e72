// Package suggest finds the word a user most likely meant, for the "did you
// mean" hints of error messages (unknown fields, enum values, names).
package suggest

import "strings"

// maxLen bounds the words compared: the edit distance is quadratic, and a
// longer word is no typo of a field name.
const maxLen = 64

// Closest returns the candidate that word most likely misspells: one equal
// to it after folding case and "_" to "-", else the nearest within edit
// distance 2 (the first of equals in candidates' order), else "".
func Closest(word string, candidates []string) string {
	w := fold(word)
	best, bestD := "", 3
	for _, c := range candidates {
		f := fold(c)
		if f == w {
			return c
		}
		if d := distance(f, w); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func fold(s string) string { return strings.ReplaceAll(strings.ToLower(s), "_", "-") }

// distance is the optimal string alignment distance of a and b in bytes:
// the Levenshtein distance (insertions, deletions, substitutions) with the
// swap of two adjacent bytes counted as one edit, since "retires" for
// "retries" and "wiat" for "wait" are one slip of the fingers, not two.
// Words longer than maxLen are reported as far apart.
func distance(a, b string) int {
	if len(a) > maxLen || len(b) > maxLen {
		return maxLen
	}
	prev2 := make([]int, len(b)+1) // row i-2
	prev := make([]int, len(b)+1)  // row i-1
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
