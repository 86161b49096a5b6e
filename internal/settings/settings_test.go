package settings_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/acv/acv/internal/settings"
)

var update = flag.Bool("update", false, "rewrite README.md's configuration table from settings.Service")

const readme = "../../README.md"

// tableHead opens README's configuration table; its rows run to the first line that is no row.
const tableHead = "| variable | default | meaning |\n|---|---|---|\n"

// table renders list as README's rows.
func table(list []settings.Setting) string {
	var b strings.Builder
	for _, s := range list {
		def := "—"
		if s.Default != "" {
			def = "`" + s.Default + "`"
		}
		b.WriteString("| `" + s.Name + "` | " + def + " | " + s.Meaning + " |\n")
	}
	return b.String()
}

// The README's configuration table is what operators read: it is the Service list, row for
// row. go test ./internal/settings -run README -update rewrites it.
func TestREADMETableIsTheServiceSettings(t *testing.T) {
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, tableHead)
	if start < 0 {
		t.Fatalf("README has no configuration table (%q)", tableHead)
	}
	start += len(tableHead)
	end := start
	for end < len(doc) && doc[end] == '|' {
		end += strings.IndexByte(doc[end:], '\n') + 1
	}
	want := table(settings.Service)
	if *update {
		if err := os.WriteFile(readme, []byte(doc[:start]+want+doc[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got := doc[start:end]
	if got == want {
		return
	}
	gotRows, wantRows := rowsByName(got), rowsByName(want)
	for _, s := range settings.Service {
		switch g, ok := gotRows[s.Name]; {
		case !ok:
			t.Errorf("README lacks %s:\n  %s", s.Name, wantRows[s.Name])
		case g != wantRows[s.Name]:
			t.Errorf("README's row of %s differs:\n  README:   %s\n  settings: %s", s.Name, g, wantRows[s.Name])
		}
	}
	for name, g := range gotRows {
		if _, ok := wantRows[name]; !ok {
			t.Errorf("README documents %s, which no acv program reads:\n  %s", name, g)
		}
	}
	if !t.Failed() {
		t.Errorf("README's rows are in another order than settings.Service's")
	}
	t.Log("go test ./internal/settings -run README -update rewrites README's table")
}

// rowsByName maps each row of a rendered table to its variable's name.
func rowsByName(table string) map[string]string {
	rows := map[string]string{}
	for _, r := range strings.Split(strings.TrimSuffix(table, "\n"), "\n") {
		if _, rest, ok := strings.Cut(r, "`"); ok {
			name, _, _ := strings.Cut(rest, "`")
			rows[name] = r
		}
	}
	return rows
}

// An unset variable reads as its default; one set, even empty, as its value, trimmed.
func TestGet(t *testing.T) {
	t.Setenv("ACV_ADMIN_ADDR", "")
	os.Unsetenv("ACV_ADMIN_ADDR")
	if got := settings.Get("ACV_ADMIN_ADDR"); got != "127.0.0.1:8081" {
		t.Errorf("unset: %q, want the default", got)
	}
	t.Setenv("ACV_ADMIN_ADDR", "")
	if got := settings.Get("ACV_ADMIN_ADDR"); got != "" {
		t.Errorf("set empty: %q, want empty", got)
	}
	t.Setenv("ACV_ADMIN_ADDR", " 0.0.0.0:8081\n")
	if got := settings.Get("ACV_ADMIN_ADDR"); got != "0.0.0.0:8081" {
		t.Errorf("set: %q", got)
	}
}
