package console

import (
	"bytes"
	"cmp"
	"embed"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// renderError answers err as a page, with the status and detail the API would answer.
func (s *Server) renderError(c *gin.Context, se *Session, err error) {
	status, detail := s.refusal(c, err)
	if c.Writer.Written() {
		return
	}
	s.render(c, se, status, "error", http.StatusText(status), "", detail, map[string]any{"Status": status})
	c.Abort()
}

// flashes are the messages a redirect may ask the next page to show (?done=…): fixed texts.
var flashes = map[string]string{
	"password":          "Password changed. Your other sessions have ended.",
	"project_created":   "Project created.",
	"project_enabled":   "Project enabled.",
	"project_disabled":  "Project disabled.",
	"expiry_set":        "Project expiry set.",
	"expiry_cleared":    "Project expiry cleared.",
	"generated":         "Codes generated: %s.",
	"generate_started":  "Generation started; its progress is shown below.",
	"batch_cancelled":   "Generation cancelled; the codes made so far stay until the batch is revoked.",
	"batch_failed":      "Generation failed; see the batch below.",
	"batch_revoked":     "Batch revoked; codes disabled: %s.",
	"bulk_disabled":     "Codes disabled: %s.",
	"key_revoked":       "API key revoked.",
	"code_disabled":     "Code disabled.",
	"code_enabled":      "Code enabled.",
	"verify_ok":         "Code verified by hand; the reason is in the admin audit log.",
	"verify_failed":     "The code was not verified: %s.",
	"reactivate_ok":     "Code reactivated by hand; the reason is in the audit and verification logs.",
	"reactivate_failed": "The code was not reactivated: %s.",
	"account_disabled":  "Account disabled; its sessions have ended.",
	"account_enabled":   "Account enabled.",
	"role_changed":      "Role changed.",
	"token_revoked":     "API token revoked: it is refused from now on.",
}

// flashArg is what may fill a flash's %s: a count or an error code.
var flashArg = regexp.MustCompile(`^[A-Z0-9_,]{1,40}$`)

func flash(c *gin.Context) string {
	msg, ok := flashes[c.Query("done")]
	if !ok {
		return ""
	}
	arg := c.Query("n")
	if !flashArg.MatchString(arg) {
		arg = "?"
	} else if n, err := strconv.ParseInt(arg, 10, 64); err == nil {
		arg = thousands(n)
	}
	if strings.Contains(msg, "%s") {
		return fmt.Sprintf(msg, arg)
	}
	return msg
}

func redirectDone(c *gin.Context, err error, path, done, arg string) error {
	if err != nil {
		return err
	}
	q := url.Values{"done": {done}}
	if arg != "" {
		q.Set("n", arg)
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	c.Redirect(http.StatusSeeOther, path+sep+q.Encode())
	return nil
}

func projectPath(id string) string { return "/projects/" + url.PathEscape(id) }

func codePath(projectID, value string) string {
	return projectPath(projectID) + "/code?" + url.Values{"value": {value}}.Encode()
}

// The web pages' templates, stylesheet and script: no build step, no file beside the binary.
//
//go:embed web/templates/*.html web/static/*
var webFS embed.FS

// pageNames are the pages, each web/templates/<name>.html filling layout.html.
var pageNames = []string{"login", "password", "dashboard", "projects", "project", "code", "logs", "audit", "accounts", "bulkdisable", "error", "docs", "apiguide", "batches", "tokens"}

// templateFuncs are the templates' helpers; html/template escapes every value for its place.
var templateFuncs = template.FuncMap{
	"allows": func(r Role, need string) bool { return r.Allows(Role(need)) },
	"unix": func(v any) string {
		switch t := v.(type) {
		case *int64:
			if t == nil {
				return "—"
			}
			v = *t
		case time.Time:
			v = t.Unix()
		}
		if t, ok := v.(int64); ok {
			return time.Unix(t, 0).UTC().Format("2006-01-02 15:04:05 UTC")
		}
		return fmt.Sprint(v)
	},
	"str": func(p *string) string { return *cmp.Or(p, new("—")) },
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
	"dur":   humanDuration,
	"roles": func() []Role { return roles },
	"add1":  func(a, b float64) float64 { return a + b },
	"neg":   func(a float64) float64 { return -a },
	"short": shortID,
	"past":  func(t *int64) bool { return t != nil && *t <= time.Now().Unix() },
}

func parsePages() (map[string]*template.Template, error) {
	base, err := template.New("layout.html").Funcs(templateFuncs).ParseFS(webFS, "web/templates/layout.html", "web/templates/partials.html")
	if err != nil {
		return nil, fmt.Errorf("console templates: %w", err)
	}
	ps := map[string]*template.Template{}
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
	Title, Nav string   // Nav: the navigation entry to mark current
	Account    *Account // nil before login
	CSRF       string
	// Flash is a message about what the previous request did; Error one about what failed.
	Flash, Error string
	Data         any
}

func (v view) Role() Role {
	if v.Account == nil {
		return ""
	}
	return v.Account.Role
}

// render writes page name for se (nil before login) with data and errMsg, and on a 200 without
// one the flash a redirect asked for; buffered so a template error is a 500, not half a page.
func (s *Server) render(c *gin.Context, se *Session, status int, name, title, nav, errMsg string, data any) {
	v := view{Title: title, Nav: nav, Error: errMsg, Data: data}
	if se != nil {
		a := accountOf(se.Account)
		v.Account, v.CSRF = &a, se.CSRFToken()
	}
	if status == http.StatusOK && errMsg == "" {
		v.Flash = flash(c)
		if strings.HasSuffix(c.Query("done"), "_failed") {
			// What a refused action reports is an error, never a green banner.
			v.Error, v.Flash = v.Flash, ""
		}
	}
	var buf bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&buf, "layout.html", v); err != nil {
		s.log.ErrorContext(c.Request.Context(), "console: render page", "page", name, "err", err)
		c.AbortWithStatus(http.StatusInternalServerError)
		return
	}
	// Nothing from outside the console, no framing.
	c.Header("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	c.Header("X-Frame-Options", "DENY")
	c.Header("Referrer-Policy", "same-origin")
	c.Data(status, "text/html; charset=utf-8", buf.Bytes())
}

// page renders page name for session se with the flash a redirect asked for and data.
func (s *Server) page(c *gin.Context, se *Session, name, title, nav string, data any) error {
	s.render(c, se, http.StatusOK, name, title, nav, "", data)
	return nil
}

// thousands writes a count with comma separators (100,000), as people read counts.
func thousands(n int64) string {
	s, sign := strconv.FormatUint(uint64(n), 10), ""
	if n < 0 {
		s, sign = strconv.FormatUint(uint64(-n), 10), "-"
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return sign + s
}

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

func shortID(id string) string {
	if utf8.RuneCountInString(id) <= 12 {
		return id
	}
	return id[:8] + "…"
}

// projectNames maps every project's id to its name, and lists the projects, for the filters.
func (s *Server) projectNames(c *gin.Context) (map[string]string, []contract.Project, error) {
	ps, err := s.ops.Projects(c.Request.Context())
	if err != nil {
		return nil, nil, err
	}
	names := make(map[string]string, len(ps))
	for _, p := range ps {
		names[p.ID] = p.Name
	}
	return names, ps, nil
}

// pager is a keyset-paged table's position ("Page 2 of 14", "51–100 of 693") with links to
// the previous and next page; the links carry the trail of cursors that led here (?trail=).
type pager struct {
	Page       int
	Pages      int   // 0 when the total is not known
	From, To   int64 // the rows shown, counting from 1
	Total      int64 // -1 when not known
	Prev, Next string
}

// keysetPager is the pager of a page read from the query parameter key that showed shown rows
// of size, next the following cursor, total the rows matching (-1 unknown), base the filters.
func keysetPager(c *gin.Context, base url.Values, path, key, next string, shown, size int, total int64) pager {
	cursor := c.Query(key)
	var trail []string
	if cursor != "" {
		trail = strings.Split(c.Query("trail"), ",")
	}
	p := pager{Page: len(trail) + 1, Total: total}
	p.From = int64(len(trail)*size) + 1
	p.To = p.From + int64(shown) - 1
	if shown == 0 {
		p.From = 0
	}
	if total >= 0 {
		p.Pages = int((total + int64(size) - 1) / int64(size))
	}
	link := func(cur string, tr []string) string {
		q := maps.Clone(base)
		if cur != "" {
			q.Set(key, cur)
			q.Set("trail", strings.Join(tr, ","))
		}
		return path + "?" + q.Encode()
	}
	if len(trail) > 0 {
		p.Prev = link(trail[len(trail)-1], trail[:len(trail)-1])
	}
	if next != "" {
		p.Next = link(next, append(append([]string{}, trail...), cursor))
	}
	return p
}
