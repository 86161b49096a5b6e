package contract

import (
	"strings"
	"testing"
)

// TestValidateBy: verified_by and reactivated_by may be any short free text except one that
// begins with the console's marker, in any ASCII case.
func TestValidateBy(t *testing.T) {
	for _, tc := range []struct {
		v  string
		ok bool
	}{
		{"till-7", true},
		{"", true},
		{"console", true},
		{"my console:7", true},
		{"consolé:x", true},
		{"console:alice", false},
		{"CONSOLE:alice", false},
		{"Console:", false},
		{strings.Repeat("x", MaxByLen), true},
		{strings.Repeat("x", MaxByLen+1), false},
		{"a\x07b", false},
	} {
		err := ValidateBy("verified_by", tc.v)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateBy(%q) = %v, want ok %v", tc.v, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "verified_by") {
			t.Errorf("ValidateBy(%q) = %q: does not name the field", tc.v, err)
		}
	}
}
