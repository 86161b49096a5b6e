package localenv

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// StatFields starts at the state whatever the command name holds (spaces, parentheses), and
// refuses a file without the command's closing parenthesis or without fields after it.
func TestStatFields(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		content string
		want    []string
	}{
		{"4242 (redis-server) S 1 4242 4242 0 -1\n", []string{"S", "1", "4242", "4242", "0", "-1"}},
		{"4242 (a) b (c)) R 7 8\n", []string{"R", "7", "8"}},
		{"4242 (name\n", nil},
		{"4242 (name)\n", nil},
	} {
		path := filepath.Join(dir, "stat")
		if err := os.WriteFile(path, []byte(c.content), 0o600); err != nil {
			t.Fatal(err)
		}
		if f, ok := StatFields(path); ok != (c.want != nil) || !slices.Equal(f, c.want) {
			t.Errorf("StatFields(%q) = %q, %v; want %q", c.content, f, ok, c.want)
		}
	}
	if _, ok := StatFields(filepath.Join(dir, "missing")); ok {
		t.Error("a missing file read as a stat")
	}
	// This process's own: field 4 is its parent.
	f, ok := StatFields("/proc/self/stat")
	if !ok || len(f) < 2 || f[1] != strconv.Itoa(os.Getppid()) {
		t.Fatalf("/proc/self/stat fields %q (ok %v), want the parent %d at field 4", f, ok, os.Getppid())
	}
}
