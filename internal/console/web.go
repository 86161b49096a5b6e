package console

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
)

// The web pages' templates and their stylesheet and script, embedded in the binary: the
// console needs no build step and no file beside the binary.
//
//go:embed web/templates/*.html web/static/*
var webFS embed.FS

// pageNames are the pages, each a file web/templates/<name>.html defining "content" (and
// "title") inside layout.html.
var pageNames = []string{"login", "password", "dashboard", "projects", "project", "code", "logs", "audit", "accounts", "bulkdisable", "error", "docs", "apiguide", "batches", "tokens"}

// templateFuncs are the helpers the templates call. Escaping is html/template's: every value is
// escaped for where it lands (text, attribute, URL).
var templateFuncs = template.FuncMap{
	"allows": func(r Role, need string) bool { return r.Allows(Role(need)) },
	"unix": func(v any) string {
		switch t := v.(type) {
		case int64:
			return time.Unix(t, 0).UTC().Format("2006-01-02 15:04:05 UTC")
		case *int64:
			if t == nil {
				return "—"
			}
			return time.Unix(*t, 0).UTC().Format("2006-01-02 15:04:05 UTC")
		case time.Time:
			return t.UTC().Format("2006-01-02 15:04:05 UTC")
		}
		return fmt.Sprint(v)
	},
	"str": func(p *string) string {
		if p == nil {
			return "—"
		}
		return *p
	},
	"num": thousands,
	// count is a count with its noun, "1 code" and "1,509 codes".
	"count": func(n any, one, many string) string {
		v, _ := strconv.ParseInt(fmt.Sprint(n), 10, 64)
		if v == 1 {
			return "1 " + one
		}
		return thousands(v) + " " + many
	},
	"wide":  func(n int) int64 { return int64(n) },
	"pct":   func(f float64) string { return fmt.Sprintf("%.2f %%", f*100) },
	"add":   func(a, b int) int { return a + b },
	"mod":   func(a, b int) int { return a % b },
	"dur":   humanDuration,
	"hex":   hexOf,
	"roles": func() []Role { return []Role{RoleViewer, RoleSupport, RoleOperator, RoleAdmin} },
	"add1":  func(a, b float64) float64 { return a + b },
	"neg":   func(a float64) float64 { return -a },
	"short": shortID,
	"past":  func(t *int64) bool { return t != nil && *t <= time.Now().Unix() },
	"query": queryWith,
}

// pages are the parsed templates, one per page.
type pages map[string]*template.Template

func parsePages() (pages, error) {
	base, err := template.New("layout.html").Funcs(templateFuncs).ParseFS(webFS, "web/templates/layout.html", "web/templates/partials.html")
	if err != nil {
		return nil, fmt.Errorf("console templates: %w", err)
	}
	ps := pages{}
	for _, name := range pageNames {
		t, err := template.Must(base.Clone()).ParseFS(webFS, "web/templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", name, err)
		}
		ps[name] = t
	}
	return ps, nil
}

// view is what every page template receives: the layout's fields and the page's own Data.
type view struct {
	Title string
	// Nav is the navigation entry to mark current.
	Nav string
	// Account and CSRF are the logged-in account and its session's CSRF token; nil and "" on
	// the login page.
	Account *Account
	CSRF    string
	// Flash is a message about what the previous request did; Error one about what failed.
	Flash string
	Error string
	Data  any
	// Tokens is whether the console serves the API token page, for the navigation's entry.
	Tokens bool
}

// Role is the logged-in account's role, "" when none.
func (v view) Role() Role {
	if v.Account == nil {
		return ""
	}
	return v.Account.Role
}

// securityHeaders go with every page: no script, style, fetch or form target outside the
// console, no framing. (console.js reads a running batch's progress from the admin API.)
func securityHeaders(c *gin.Context) {
	c.Header("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	c.Header("X-Frame-Options", "DENY")
	c.Header("Referrer-Policy", "same-origin")
}

// render writes page name with v, buffered so a template error is a 500, not half a page.
func (s *Server) render(c *gin.Context, status int, name string, v view) {
	t := s.pages[name]
	v.Tokens = s.servesPage("/tokens")
	if failedFlashes[c.Query("done")] && v.Flash != "" {
		// What a refused action reports is an error, never a green banner.
		v.Error, v.Flash = v.Flash, ""
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", v); err != nil {
		s.log.ErrorContext(c.Request.Context(), "console: render page", "page", name, "err", err)
		c.AbortWithStatus(http.StatusInternalServerError)
		return
	}
	securityHeaders(c)
	c.Data(status, "text/html; charset=utf-8", buf.Bytes())
}

// viewFor starts a page's view for session se (nil before login).
func viewFor(se *Session, title, nav string) view {
	v := view{Title: title, Nav: nav}
	if se != nil {
		a := accountOf(se.Account)
		v.Account, v.CSRF = &a, se.CSRFToken()
	}
	return v
}

// trimForm is a form field without surrounding spaces.
func trimForm(c *gin.Context, name string) string { return strings.TrimSpace(c.PostForm(name)) }

// thousands writes a count with comma separators (100,000), as people read counts.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// humanDuration writes an age as people read one: whole seconds under two minutes, then
// minutes, hours, days.
func humanDuration(d time.Duration) string {
	switch {
	case d < 2*time.Minute:
		return strconv.Itoa(int(d.Round(time.Second)/time.Second)) + " s"
	case d < 2*time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + " min"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + " h"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + " days"
}
