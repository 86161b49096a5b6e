package plural

import "testing"

func TestN(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0 codes"}, {1, "1 code"}, {2, "2 codes"}, {-1, "-1 codes"}, {1509, "1509 codes"}} {
		if got := N(tc.n, "code", "codes"); got != tc.want {
			t.Errorf("N(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	if got := N(uint(1), "batch", "batches"); got != "1 batch" {
		t.Errorf("N(1 batch) = %q", got)
	}
}
