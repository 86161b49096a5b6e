package main

import "testing"

// GOMEMLIMIT's default and the sizes an operator writes read as the Go runtime reads them;
// what does not parse is left to the runtime.
func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"120MiB": 120 << 20, "1GiB": 1 << 30, "512KiB": 512 << 10, "2TiB": 2 << 40, "4096B": 4096, "4096": 4096} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"off", "1.5GiB", "MiB", "1GB"} {
		if got, err := parseBytes(in); err == nil {
			t.Errorf("parseBytes(%q) = %d, want an error", in, got)
		}
	}
}
