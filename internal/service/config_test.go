package service_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/acv/acv/internal/service"
)

// The README's configuration table is what operators read; it must name every setting the
// service reads, with the same default, and nothing else.
func TestREADMEListsEverySetting(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([A-Z_]+)` \\| ([^|]*) \\|")
	documented := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		documented[m[1]] = strings.Trim(strings.TrimSpace(m[2]), "`")
	}
	for _, s := range service.Settings {
		def, ok := documented[s.Name]
		if !ok {
			t.Errorf("README does not document %s", s.Name)
			continue
		}
		want := s.Default
		if want == "" {
			want = "—"
		}
		if s.Name == "ACV_INSTANCE" {
			want = "host name"
		}
		if def != want {
			t.Errorf("README gives %s the default %q, the service %q", s.Name, def, want)
		}
		delete(documented, s.Name)
	}
	for name := range documented {
		t.Errorf("README documents %s, which the service does not read", name)
	}
}
