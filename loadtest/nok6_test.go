// Package loadtest_test holds the checks of the load-test tooling that concern the whole
// repository.
package loadtest_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// k6Installs are the ways a script could fetch, build or install k6: go install or go get of
// go.k6.io (or xk6), a download of a k6 release archive or package, a package manager's
// install, an npm dependency, k6's container image.
var k6Installs = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\bgo\s+(install|get|run)\b.*\bgo\.k6\.io`),
	regexp.MustCompile(`(?i)\bxk6\b`),
	regexp.MustCompile(`(?i)\b(curl|wget|aria2c)\b.*k6.*\.(tar\.gz|tgz|zip|deb|rpm)\b`),
	regexp.MustCompile(`(?i)github\.com/grafana/k6/releases|\bdl\.k6\.io\b|\bpackages\.k6\.io\b`),
	regexp.MustCompile(`(?i)\b(apt|apt-get|aptitude|dnf|yum|zypper|apk|brew|snap|choco|winget|pacman)\s+(-\S+\s+)*(install|add|-S)\b[^#\n]*\sk6(\s|$|=|@)`),
	regexp.MustCompile(`(?i)\b(npm|pnpm|yarn)\s+(-\S+\s+)*(install|i|add|ci)\b[^#\n]*\sk6(\s|$|@)|\bnpx\s+k6\b`),
	regexp.MustCompile(`"k6"\s*:\s*"`),
	regexp.MustCompile(`(?i)\bgrafana/k6\b`),
}

// The patterns catch the usual ways of installing k6, and leave using one alone.
func TestK6InstallPatterns(t *testing.T) {
	installs := []string{
		`go install go.k6.io/k6@latest`,
		`	go install "go.k6.io/k6@${K6_VERSION:-latest}" >&2`,
		`xk6 build --with github.com/grafana/xk6-sql`,
		`curl -sSL https://github.com/grafana/k6/releases/download/v0.50.0/k6-v0.50.0-linux-amd64.tar.gz | tar xz`,
		`wget -q https://dl.k6.io/deb/k6_0.50.0.deb`,
		`apt-get install -y k6`,
		`DEBIAN_FRONTEND=noninteractive apt-get install -y -qq k6 >/dev/null`,
		`brew install k6`,
		`npm install --no-save k6`,
		`npx k6 run script.js`,
		`    "k6": "^0.0.0",`,
		`docker run --rm -i grafana/k6 run - <script.js`,
	}
	uses := []string{
		`"$K6" run --no-usage-report --quiet \`,
		`[ -f "loadtest/k6/$s.js" ] || die "no scenario loadtest/k6/$s.js"`,
		`K6=${K6:-$(command -v k6 || true)}`,
		`apt-get install -y -qq prometheus >/dev/null`,
		`cd api/sdk/typescript && npm install --no-audit --no-fund --silent`,
		`// Scenarios are the scenarios of loadtest/k6, ported to Go`,
	}
	matches := func(line string) bool {
		for _, re := range k6Installs {
			if re.MatchString(line) {
				return true
			}
		}
		return false
	}
	for _, l := range installs {
		if !matches(l) {
			t.Errorf("no pattern catches %q", l)
		}
	}
	for _, l := range uses {
		if matches(l) {
			t.Errorf("a pattern takes %q for an install", l)
		}
	}
}

// No step of the project installs k6: k6 is AGPL-licensed, so the project ships its k6
// scripts for testers who bring their own k6 and runs its load tests with its own load
// generator. Every script, Makefile, Dockerfile, CI and package file of the repository is
// searched for a way of fetching, building or installing k6.
func TestNoStepInstallsK6(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	self, err := filepath.Abs("nok6_test.go")
	if err != nil {
		t.Fatal(err)
	}
	scanned := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".acv", ".tools", "node_modules", "bin", "vendor":
				return filepath.SkipDir
			}
			return nil
		}
		if path == self || !isStep(path) {
			return nil
		}
		scanned++
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		s := bufio.NewScanner(f)
		s.Buffer(make([]byte, 1<<20), 1<<20)
		for line := 1; s.Scan(); line++ {
			// Every pattern names k6; most lines do not.
			if !strings.Contains(strings.ToLower(s.Text()), "k6") {
				continue
			}
			for _, re := range k6Installs {
				if re.MatchString(s.Text()) {
					rel, _ := filepath.Rel(root, path)
					t.Errorf("%s:%d installs or fetches k6 (%s): %s", rel, line, re, strings.TrimSpace(s.Text()))
				}
			}
		}
		return s.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if scanned < 10 {
		t.Fatalf("searched only %d files under %s: the walk misses the repository", scanned, root)
	}
}

// isStep tells whether a file can hold a step the project runs: a script, a Makefile, a
// Dockerfile, a CI or compose or chart file, a package manifest, or Go (which may exec one).
// Documentation is not a step: loadtest/README.md tells a user how to install k6 themselves.
func isStep(path string) bool {
	base := filepath.Base(path)
	switch {
	case base == "Makefile" || strings.HasSuffix(base, ".mk"),
		strings.HasPrefix(base, "Dockerfile"), base == "Containerfile",
		base == "package.json", base == "package-lock.json":
		return true
	}
	switch filepath.Ext(base) {
	case ".sh", ".bash", ".yml", ".yaml", ".go", ".py", ".toml", ".cfg", ".ts", ".mjs", ".cjs":
		return true
	}
	// CI definitions without an extension (.ci/run).
	return filepath.Base(filepath.Dir(path)) == ".ci"
}
