package localenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A password file is made once, mode 0600, and read back unchanged; one that others could read
// is made private; one that holds no usable password is refused.
func TestPasswordFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "redis.password")
	pw, err := PasswordFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkPassword(pw); err != nil || len(pw) != 64 {
		t.Errorf("made password %q: %v", pw, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("password file: %v, %v; want mode 0600", fi.Mode().Perm(), err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := PasswordFile(path)
	if err != nil || again != pw {
		t.Errorf("read again: %q, %v; want the same password", again, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("a readable password file: mode %v after reading, %v; want 0600", fi.Mode().Perm(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want the password file only", len(entries))
	}
	for _, bad := range []string{"", "short", strings.Repeat("a", 20) + "'", strings.Repeat("b", 20) + " c"} {
		if err := os.WriteFile(path, []byte(bad+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := PasswordFile(path); err == nil {
			t.Errorf("password file holding %q: accepted", bad)
		}
	}
}
