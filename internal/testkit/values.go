package testkit

import (
	"fmt"
	"slices"

	"github.com/acv/acv/api/contract"
)

// The contract's optional members are pointers (null on the wire); these compare and print
// them without a nil check at every use.

// Ptr returns a pointer to v, for optional members in a literal.
func Ptr[T any](v T) *T { return &v }

// Deref is *p, or T's zero value when p is nil (null).
func Deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// Show prints *p, or "null" when p is nil, for messages that must tell null from a zero value.
func Show[T any](p *T) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

// EqualPtr tells whether a and b are both null or point to equal values.
func EqualPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// Sorted returns the values sorted, leaving v as it was: lists compared as sets.
func Sorted(v ...string) []string {
	v = slices.Clone(v)
	slices.Sort(v)
	return v
}

// SameSet compares two lists as multisets.
func SameSet(a, b []string) bool {
	return slices.Equal(Sorted(a...), Sorted(b...))
}

// Values returns the code values of a list's items, sorted.
func Values(items []contract.Code) []string {
	out := make([]string, len(items))
	for i, c := range items {
		out[i] = c.Code
	}
	slices.Sort(out)
	return out
}
