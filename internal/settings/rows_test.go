package settings

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Each variable has one row: a name in two lists would have two defaults.
func TestEveryVariableHasOneRow(t *testing.T) {
	seen := map[string]bool{}
	for _, l := range all {
		for _, s := range l {
			if seen[s.Name] {
				t.Errorf("%s has two rows", s.Name)
			}
			seen[s.Name] = true
			if s.Meaning == "" {
				t.Errorf("%s says nothing of what it means", s.Name)
			}
		}
	}
}

// The programs read the environment here only, and each name they read has a row. The test kit
// and the bench pass the environment on to the processes they start.
func TestEnvironmentIsReadHereOnly(t *testing.T) {
	readsEnv := regexp.MustCompile(`os\.(Getenv|LookupEnv|Environ)\(`)
	named := regexp.MustCompile(`settings\.(Get|Default)\("([A-Za-z0-9_]+)"\)`)
	elsewhere := map[string]bool{"internal/settings/settings.go": true, "internal/testkit/process.go": true, "loadtest/bench/procs.go": true}
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("../..", path)
		if d.IsDir() {
			if d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if readsEnv.Match(b) && !elsewhere[rel] {
			t.Errorf("%s reads the environment: read it through internal/settings", rel)
		}
		for _, m := range named.FindAllSubmatch(b, -1) {
			if !hasRow(string(m[2])) {
				t.Errorf("%s reads %s, which has no row", rel, m[2])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func hasRow(name string) bool {
	for _, l := range all {
		for _, s := range l {
			if s.Name == name {
				return true
			}
		}
	}
	return false
}
