// Package nearest finds, among names, the one a mistyped name most
// likely meant: the "did you mean" of the command line (an unknown flag)
// and of a call (a function that is not served). A leaf package: it
// imports nothing of this module.
package nearest

import (
	"iter"
	"strings"
)

// Name returns the candidate closest to name, "" when none is close:
// one equal but for case (distance 0), one name is a prefix of (at least
// 2 characters typed; distance 1), else the smallest Levenshtein distance
// of at most 2, counted in bytes and case-insensitively. Candidates
// shorter than 2 bytes and name itself are never returned; the first of
// equally close candidates wins.
func Name(name string, candidates iter.Seq[string]) string {
	best, bestD := "", 3
	lower := strings.ToLower(name)
	for c := range candidates {
		if len(c) < 2 || c == name {
			continue
		}
		lc := strings.ToLower(c)
		d := Distance(lower, lc)
		if strings.HasPrefix(lc, lower) && len(name) >= 2 {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// Distance is the Levenshtein distance of a and b, in bytes: the fewest
// single-byte insertions, deletions and substitutions that turn a into
// b.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
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
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
