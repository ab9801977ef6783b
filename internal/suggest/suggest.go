// Package suggest finds the known word a mistyped one was probably meant
// to be, for "did you mean" in errors.
package suggest

import "strings"

// Nearest returns the candidate closest to word by edit distance (an
// adjacent swap counts one), if close enough to be a typo of it: at most a
// third of the longer word's letters, and no more than three. Ties go to
// the earlier candidate; "" when none is close.
func Nearest(word string, candidates []string) string {
	best, bestD := "", 0
	lw := strings.ToLower(word)
	for _, c := range candidates {
		d := distance(lw, strings.ToLower(c))
		limit := min(3, max(1, max(len(word), len(c))/3))
		if d > limit || d == 0 && c == word {
			continue
		}
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the optimal string alignment distance of a and b, by runes.
func distance(a, b string) int {
	x, y := []rune(a), []rune(b)
	// rows i-2, i-1 and i of the table.
	prev2 := make([]int, len(y)+1)
	prev := make([]int, len(y)+1)
	cur := make([]int, len(y)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(y)]
}
