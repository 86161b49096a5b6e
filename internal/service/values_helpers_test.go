package service_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

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

func TestPointerHelpers(t *testing.T) {
	var none *string
	if Deref(none) != "" || Deref(Ptr("x")) != "x" || Show(none) != "null" ||
		Show(Ptr(int64(7))) != "7" || !EqualPtr(none, nil) || EqualPtr(none, Ptr("")) ||
		!EqualPtr(Ptr("a"), Ptr("a")) {
		t.Fatal("pointer helpers disagree with their documentation")
	}
	if !SameSet([]string{"b", "a", "b"}, []string{"b", "b", "a"}) || SameSet([]string{"a"}, []string{"a", "a"}) {
		t.Fatal("SameSet is not a multiset comparison")
	}
	if got := Values([]contract.Code{{Code: "b"}, {Code: "a"}}); strings.Join(got, ",") != "a,b" {
		t.Fatalf("Values = %v", got)
	}
}
