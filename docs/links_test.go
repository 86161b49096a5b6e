package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every relative link of the repository's Markdown (a [text](path) link or a path in a code
// span that leaves the folder, `../x`) names a file or folder a clone has: a reader following
// the README or a design note never lands on a file that lives only on someone's machine.
func TestMarkdownLinksResolveInAClone(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", root, "ls-files").Output()
	if err != nil {
		t.Skipf("no git checkout: %v", err)
	}
	tracked := map[string]bool{}
	for _, f := range strings.Fields(string(out)) {
		tracked[f] = true
		for d := filepath.Dir(f); d != "."; d = filepath.Dir(d) {
			tracked[d] = true
		}
	}
	link := regexp.MustCompile("\\]\\(([^)\\s]+)\\)|`(\\.\\./[^`\\s]+)`")
	checked := 0
	for f := range tracked {
		if !strings.HasSuffix(f, ".md") || strings.Contains(f, "node_modules/") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue // a folder named *.md, or a file deleted in the working tree
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1] + m[2]
			if strings.Contains(target, ":") || strings.HasPrefix(target, "#") {
				continue // a URL, a mail address or an anchor of the page itself
			}
			target, _, _ = strings.Cut(target, "#")
			p := filepath.Clean(filepath.Join(filepath.Dir(f), target))
			checked++
			if !tracked[p] {
				t.Errorf("%s links to %s, which a clone does not have", f, target)
			}
		}
	}
	if checked == 0 {
		t.Fatal("found no relative link to check")
	}
}
