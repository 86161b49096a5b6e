package console_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestConsoleStaticServesFilesOnly: /static/ serves the stylesheet and the script, and a
// directory is not found rather than listed.
func TestConsoleStaticServesFilesOnly(t *testing.T) {
	e := newEnv(t, nil)
	get := func(path string) (int, string) {
		t.Helper()
		res, err := http.Get(e.http.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, string(b)
	}
	for _, f := range []string{"/static/console.css", "/static/console.js"} {
		if status, body := get(f); status != http.StatusOK || body == "" {
			t.Errorf("%s: %d, %d bytes", f, status, len(body))
		}
	}
	for _, dir := range []string{"/static/", "/static", "/static/.", "/static//"} {
		status, body := get(dir)
		if status != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", dir, status)
		}
		// A listing links each file by its bare name (the error page links /static/console.css).
		if strings.Contains(body, `href="console.css"`) || strings.Contains(body, `href="console.js"`) {
			t.Errorf("%s lists the directory: %.300s", dir, body)
		}
	}
}
