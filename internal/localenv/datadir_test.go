package localenv

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCanTraverse(t *testing.T) {
	dir := t.TempDir()
	private := filepath.Join(dir, "private")
	if err := os.MkdirAll(filepath.Join(private, "inner"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const other = 4242424
	if CanTraverse(filepath.Join(private, "inner"), other, nil) {
		t.Error("another user traverses a mode-0700 directory")
	}
	if !CanTraverse(dir, other, nil) {
		t.Errorf("another user cannot traverse %s (0755 all the way)", dir)
	}
	if !CanTraverse(filepath.Join(private, "inner"), os.Getuid(), nil) {
		t.Error("the owner cannot traverse its own directory")
	}
}

// A data directory the postgres user cannot reach gets its cluster elsewhere, recorded so the
// next run finds the same one.
func TestPostgresDataDirOutsidePrivateParent(t *testing.T) {
	cred, err := pgCredential()
	if err != nil || cred == nil {
		t.Skip("only running as root does the server change user")
	}
	parent := t.TempDir()
	if err := os.Chmod(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(parent, ".acv")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := PostgresDataDir(home)
	if err != nil {
		t.Fatal(err)
	}
	if d == filepath.Join(home, "pg") {
		t.Fatalf("cluster placed in %s, which the postgres user cannot reach", d)
	}
	if !CanTraverse(filepath.Dir(d), int(cred.Uid), pgGroups()) {
		t.Errorf("the postgres user cannot reach %s", filepath.Dir(d))
	}
	again, err := PostgresDataDir(home)
	if err != nil || again != d {
		t.Errorf("second call: %q, %v; want %q", again, err, d)
	}
	os.RemoveAll(d)
}
