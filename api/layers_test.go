package api

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/acv/acv/"

// adapters hold the domain's ports to the outside: each may import the domain (api/contract),
// the pure helpers and its own subpackages, never another adapter.
var adapters = []string{"cache", "audit", "store", "api/httpapi", "internal/admin", "internal/console"}

// helpers are pure: no I/O of their own, importable by any package. api and docs are the
// embedded OpenAPI document and documentation.
var helpers = []string{"api/contract", "api", "docs", "internal/safecsv", "internal/plural", "internal/secrets", "internal/settings",
	"internal/redisscript"}

// wiring packages build the service from its adapters: only they may import an adapter.
var wiring = []string{"cmd/", "internal/service", "internal/testkit", "loadtest/"}

// TestImportsGoOneWay: api/contract imports nothing of the project; an adapter imports only
// the domain, the helpers and its own subpackages; no package outside the wiring imports an
// adapter or the wiring.
func TestImportsGoOneWay(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		if under(pkg, wiring) {
			continue
		}
		for _, imp := range fields[1:] {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			switch {
			case pkg == "api/contract":
				t.Errorf("api/contract imports %s: the domain imports nothing of the project", dep)
			case under(dep, wiring):
				t.Errorf("%s imports %s: only cmd/* and loadtest/* import the wiring", pkg, dep)
			case root(dep) != "" && root(dep) != root(pkg):
				t.Errorf("%s imports the adapter %s: only the wiring imports adapters", pkg, dep)
			case root(pkg) != "" && root(dep) == "" && !slices.Contains(helpers, dep):
				t.Errorf("%s imports %s: an adapter imports only api/contract and the helpers", pkg, dep)
			}
		}
	}
}

// root is the adapter pkg belongs to, "" when none.
func root(pkg string) string {
	for _, a := range adapters {
		if pkg == a || strings.HasPrefix(pkg, a+"/") {
			return a
		}
	}
	return ""
}

func under(pkg string, prefixes []string) bool {
	for _, p := range prefixes {
		if pkg == p || strings.HasPrefix(pkg, strings.TrimSuffix(p, "/")+"/") {
			return true
		}
	}
	return false
}
