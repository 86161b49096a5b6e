// Package plural writes a count with its noun ("1 code", "2 codes", "0 codes"), so no message
// of the CLI or the console reads "1 codes".
package plural

import "strconv"

// Integer is any count.
type Integer interface {
	~int | ~int32 | ~int64 | ~uint | ~uint32 | ~uint64
}

// N is n with one (for exactly 1) or many after it.
func N[T Integer](n T, one, many string) string {
	noun := many
	if n == 1 {
		noun = one
	}
	return strconv.FormatInt(int64(n), 10) + " " + noun
}
