package console

import (
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/api"
	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/docs"
	"github.com/gin-gonic/gin"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

type auditRow struct {
	contract.AuditRecord
	Detail auditDetail
	// TargetName and ProjectName are what a person reads ("" when only the id is known).
	TargetName, ProjectName string
}

// auditPage shows the audit log, newest first, filtered, with the chain's verification.
func (s *Server) auditPage(c *gin.Context, se *Session) error {
	ctx := c.Request.Context()
	f, err := auditFilterQuery(c)
	if err != nil {
		return err
	}
	f.Limit = 100
	rows, err := s.st.AdminAudit(ctx, f)
	if err != nil {
		return err
	}
	rep, err := s.svc.VerifyChain(ctx)
	if err != nil {
		return err
	}
	names, ps, err := s.projectNames(c)
	if err != nil {
		return err
	}
	out := make([]auditRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, auditRow{AuditRecord: r, Detail: describeAudit(r), TargetName: auditTargetName(r, names),
			ProjectName: names[r.ProjectID]})
	}
	var next string
	if len(rows) == f.Limit {
		next = strconv.FormatInt(rows[len(rows)-1].Seq, 10)
	}
	// The filters as given, for the other pages and the CSV.
	keep := kept(c, auditFilters...)
	return s.page(c, se, "audit", "Admin audit log", "audit", map[string]any{"Rows": out, "Chain": rep, "Filter": f, "CSV": "/audit.csv?" + keep.Encode(),
		"Since": c.Query("since"), "Until": c.Query("until"), "Projects": ps,
		"Pager": keysetPager(c, keep, "/audit", "before", next, len(rows), f.Limit, -1)})
}

func (s *Server) accountsPage(c *gin.Context, se *Session) error { return s.renderAccounts(c, se, nil) }

// renderAccounts shows the accounts, and shown's one-time password this once.
func (s *Server) renderAccounts(c *gin.Context, se *Session, shown *NewAccount) error {
	accs, err := s.accounts(c.Request.Context())
	if err != nil {
		return err
	}
	return s.page(c, se, "accounts", "Accounts", "accounts", map[string]any{"Accounts": accs, "Shown": shown, "Self": se.Account.ID})
}

func (s *Server) accountCreateSubmit(c *gin.Context, se *Session) error {
	acc, err := s.svc.CreateAccount(c.Request.Context(), s.actor(c, se), trimForm(c, "username"), Role(c.PostForm("role")))
	if err != nil {
		return err
	}
	return s.renderAccounts(c, se, &acc)
}

func (s *Server) accountRoleSubmit(c *gin.Context, se *Session) error {
	return redirectDone(c, s.svc.SetAccountRole(c.Request.Context(), s.actor(c, se), c.Param("admin_id"), Role(c.PostForm("role"))), "/accounts", "role_changed", "")
}

func (s *Server) accountResetSubmit(c *gin.Context, se *Session) error {
	acc, err := s.svc.ResetPassword(c.Request.Context(), s.actor(c, se), c.Param("admin_id"), "")
	if err != nil {
		return err
	}
	return s.renderAccounts(c, se, &acc)
}

func (s *Server) loginPage(c *gin.Context, _ *Session) error {
	if _, err := s.session(c); err == nil {
		c.Redirect(http.StatusSeeOther, "/")
		return nil
	}
	s.render(c, nil, http.StatusOK, "login", "Log in", "", "", nil)
	return nil
}

func (s *Server) loginSubmit(c *gin.Context, _ *Session) error {
	username := trimForm(c, "username")
	se, token, err := s.svc.Login(c.Request.Context(), username, c.PostForm("password"), c.Request.UserAgent(),
		s.proxies.clientIP(c.Request))
	if err != nil {
		return s.showRefusal(c, nil, "login", "Log in", map[string]string{"Username": username}, err)
	}
	s.setSessionCookie(c, token, false)
	c.Redirect(http.StatusSeeOther, pick(se.Account.MustChangePassword, "/password", "/"))
	return nil
}

// showRefusal shows form page name again with err's detail, or returns err when it is a fault.
func (s *Server) showRefusal(c *gin.Context, se *Session, name, title string, data any, err error) error {
	if !refused(err) {
		return err
	}
	status, detail := s.refusal(c, err)
	s.render(c, se, status, name, title, "", detail, data)
	return nil
}

func (s *Server) passwordPage(c *gin.Context, se *Session) error {
	return s.page(c, se, "password", "Change password", "", nil)
}

func (s *Server) passwordSubmit(c *gin.Context, se *Session) error {
	next := c.PostForm("new_password")
	var err error = contract.Errorf(contract.KindInvalid, "The new password and its confirmation differ")
	var token string
	if next == c.PostForm("confirm_password") {
		_, token, err = s.svc.ChangePassword(c.Request.Context(), se, c.PostForm("current_password"), next,
			c.Request.UserAgent(), s.proxies.clientIP(c.Request))
	}
	if err != nil {
		return s.showRefusal(c, se, "password", "Change password", nil, err)
	}
	s.setSessionCookie(c, token, false)
	return redirectDone(c, nil, "/", "password", "")
}

// logsPage shows a log search: the filters, a page of logs, the next page and the CSV.
func (s *Server) logsPage(c *gin.Context, se *Session) error {
	q, page, err := s.searchLogs(c)
	if err != nil {
		return err
	}
	// The filters as given, so the next page and the CSV keep them; the range as covered, so
	// a default range stays the same while paging.
	keep := kept(c, logFilters...)
	keep.Set("from", page.From.UTC().Format(time.RFC3339))
	keep.Set("to", page.To.UTC().Format(time.RFC3339))
	// The form shows a range only when one was asked for: an empty field is "the last 24 hours
	// up to now", so a search submitted again a minute later still finds the newest logs (a
	// field filled with the minute shown would cut them off).
	inputs := map[string]string{}
	for _, k := range []string{"from", "to"} {
		if c.Query(k) != "" {
			t, _ := queryTime(c, k) // already read without error by logSearchQuery
			inputs[k] = t.UTC().Format("2006-01-02T15:04")
		}
	}
	names, ps, err := s.projectNames(c)
	if err != nil {
		return err
	}
	return s.page(c, se, "logs", "Verification logs", "logs", map[string]any{"Search": q, "Page": page, "CSV": "/logs.csv?" + keep.Encode(),
		"FromInput": inputs["from"], "ToInput": inputs["to"], "Names": names, "Projects": ps,
		"Pager": keysetPager(c, keep, "/logs", "after", page.NextAfter, len(page.Items), q.Limit, -1)})
}

func (s *Server) tokensPage(c *gin.Context, se *Session) error { return s.renderTokens(c, se, nil) }

// renderTokens shows the tokens the session may see, and shown's secret this once: a person
// makes a token for the acv command or a script (with at most their own role).
func (s *Server) renderTokens(c *gin.Context, se *Session, shown *NewToken) error {
	ts, err := s.svc.Tokens(c.Request.Context(), s.actor(c, se))
	if err != nil {
		return err
	}
	return s.page(c, se, "tokens", "API tokens", "tokens", map[string]any{"Tokens": ts, "Shown": shown, "Now": time.Now().Unix()})
}

func (s *Server) tokenCreateSubmit(c *gin.Context, se *Session) error {
	maxDays := int(MaxTokenTTL / (24 * time.Hour))
	days, err := strconv.Atoi(trimForm(c, "days"))
	if err != nil || days < 1 || days > maxDays {
		return contract.Errorf(contract.KindInvalid, "Expires after must be 1 to %d days", maxDays)
	}
	t, err := s.svc.CreateToken(c.Request.Context(), s.actor(c, se), trimForm(c, "name"), Role(c.PostForm("role")),
		time.Duration(days)*24*time.Hour)
	if err != nil {
		return err
	}
	return s.renderTokens(c, se, &t)
}

func (s *Server) docsPage(c *gin.Context, se *Session) error {
	return s.page(c, se, "docs", "Documentation", "docs", map[string]any{"AdminOpenAPI": APIPrefix + "/openapi.yaml"})
}

func (s *Server) apiGuidePage(c *gin.Context, se *Session) error {
	html, toc, err := apiGuide()
	if err != nil {
		return err
	}
	return s.page(c, se, "apiguide", "Client API guide", "docs", map[string]any{"HTML": html, "TOC": toc})
}

type guideHeading struct {
	Level    int
	ID, Text string
}

// guideMarkdown renders the guide: GitHub's tables, and headings with GitHub's anchors, so
// links into docs/api.md work the same on the console and on GitHub. Raw HTML in the source is
// left out, never passed through.
var guideMarkdown = goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithParserOptions(parser.WithAutoHeadingID()))

// apiGuide is docs/api.md as HTML, with its level 2 and 3 headings for the table of contents.
func apiGuide() (template.HTML, []guideHeading, error) {
	src := docs.APIGuide()
	doc := guideMarkdown.Parser().Parse(text.NewReader(src))
	var toc []guideHeading
	err := ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if h, ok := n.(*ast.Heading); ok && entering && (h.Level == 2 || h.Level == 3) {
			id, _ := h.AttributeString("id")
			toc = append(toc, guideHeading{Level: h.Level, ID: string(id.([]byte)), Text: string(h.Lines().Value(src))})
		}
		return ast.WalkContinue, nil
	})
	var buf strings.Builder
	if err == nil {
		err = guideMarkdown.Renderer().Render(&buf, src, doc)
	}
	return template.HTML(guideBoxes.Replace(buf.String())), toc, err
}

// guideBoxes make a code block and a table scroll sideways in their own box on a narrow
// screen; a code block takes the keyboard's focus to do so.
var guideBoxes = strings.NewReplacer("<pre>", `<pre tabindex="0">`, "<table>", `<div class="scroll"><table>`, "</table>", "</table></div>")

func (s *Server) apiGuideMarkdown(c *gin.Context, _ *Session) error {
	c.Data(http.StatusOK, "text/markdown; charset=utf-8", docs.APIGuide())
	return nil
}

func (s *Server) clientOpenAPI(c *gin.Context, _ *Session) error {
	c.Data(http.StatusOK, api.OpenAPIContentType, api.OpenAPI())
	return nil
}
