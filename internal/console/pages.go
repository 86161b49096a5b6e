package console

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// pageRoute is one web page or form target: the same refusals as the API's routes (routes.go)
// in the same order, answered as pages: no session sends a browser to the login page, a
// password still to change to the password page.
type pageRoute struct {
	Method, Path         string
	Need                 Role
	Anonymous            bool
	DuringPasswordChange bool
	MaxBody              int64 // as Route.MaxBody
	handler              func(*gin.Context, *Session) error
}

// pageRoutes are the console's pages. Each calls the Service methods the API's handlers call;
// a form posts its CSRF token as the field csrf_token.
func (s *Server) pageRoutes() []pageRoute {
	const get, post = http.MethodGet, http.MethodPost
	return []pageRoute{
		{Method: get, Path: "/login", Anonymous: true, handler: s.loginPage},
		{Method: post, Path: "/login", Anonymous: true, MaxBody: loginBodyBytes, handler: s.loginSubmit},
		{Method: post, Path: "/logout", Need: RoleViewer, DuringPasswordChange: true, handler: s.logoutSubmit},
		{Method: get, Path: "/password", Need: RoleViewer, DuringPasswordChange: true, handler: s.passwordPage},
		{Method: post, Path: "/password", Need: RoleViewer, DuringPasswordChange: true, handler: s.passwordSubmit},

		{Method: get, Path: "/", Need: RoleViewer, handler: s.dashboardPage},
		{Method: get, Path: "/projects", Need: RoleViewer, handler: s.projectsPage},
		{Method: post, Path: "/projects", Need: RoleOperator, handler: s.projectCreateSubmit},
		{Method: get, Path: "/projects/:project_id", Need: RoleViewer, handler: s.projectPage},
		{Method: post, Path: "/projects/:project_id/enable", Need: RoleOperator, handler: s.projectEnabledSubmit(true)},
		{Method: post, Path: "/projects/:project_id/disable", Need: RoleOperator, handler: s.projectEnabledSubmit(false)},
		{Method: post, Path: "/projects/:project_id/generate", Need: RoleOperator, handler: s.generateSubmit},
		// The CSV, and the form's other fields and framing beside it.
		{Method: post, Path: "/projects/:project_id/import", Need: RoleOperator, MaxBody: s.cfg.MaxImportBytes + 64<<10, handler: s.importSubmit},
		{Method: post, Path: "/projects/:project_id/expiry", Need: RoleOperator, handler: s.expirySubmit},
		{Method: post, Path: "/projects/:project_id/expiry/clear", Need: RoleOperator, handler: s.expiryClearSubmit},
		{Method: post, Path: "/projects/:project_id/batches/:batch_id/cancel", Need: RoleOperator, handler: s.batchCancelSubmit},
		{Method: post, Path: "/projects/:project_id/batches/:batch_id/revoke", Need: RoleOperator, handler: s.batchRevokeSubmit},
		{Method: get, Path: "/projects/:project_id/bulk-disable", Need: RoleOperator, handler: s.bulkDisablePage},
		{Method: post, Path: "/projects/:project_id/bulk-disable", Need: RoleOperator, handler: s.bulkDisableSubmit},
		{Method: get, Path: "/projects/:project_id/export", Need: RoleOperator, handler: s.export},
		{Method: post, Path: "/projects/:project_id/keys", Need: RoleOperator, handler: s.keyCreateSubmit},
		{Method: post, Path: "/projects/:project_id/keys/:key_id/revoke", Need: RoleOperator, handler: s.keyRevokeSubmit},

		{Method: get, Path: "/projects/:project_id/code", Need: RoleViewer, handler: s.codePage},
		{Method: post, Path: "/projects/:project_id/code/disable", Need: RoleSupport, handler: s.codeDisabledSubmit(true)},
		{Method: post, Path: "/projects/:project_id/code/enable", Need: RoleSupport, handler: s.codeDisabledSubmit(false)},
		{Method: post, Path: "/projects/:project_id/code/verify", Need: RoleSupport, handler: s.manualSubmit(true)},
		{Method: post, Path: "/projects/:project_id/code/reactivate", Need: RoleSupport, handler: s.manualSubmit(false)},

		{Method: get, Path: "/batches", Need: RoleViewer, handler: s.batchesPage},
		{Method: get, Path: "/logs", Need: RoleViewer, handler: s.logsPage},
		{Method: get, Path: "/logs.csv", Need: RoleOperator, handler: s.exportLogs},
		{Method: get, Path: "/audit", Need: RoleViewer, handler: s.auditPage},
		{Method: get, Path: "/audit.csv", Need: RoleOperator, handler: s.exportAudit},

		{Method: get, Path: "/docs", Need: RoleViewer, handler: s.docsPage},
		{Method: get, Path: "/docs/api", Need: RoleViewer, handler: s.apiGuidePage},
		{Method: get, Path: "/docs/api.md", Need: RoleViewer, handler: s.apiGuideMarkdown},
		{Method: get, Path: "/docs/client-openapi.yaml", Need: RoleViewer, handler: s.clientOpenAPI},

		{Method: get, Path: "/accounts", Need: RoleAdmin, handler: s.accountsPage},
		{Method: post, Path: "/accounts", Need: RoleAdmin, handler: s.accountCreateSubmit},
		{Method: post, Path: "/accounts/:admin_id/disable", Need: RoleAdmin, handler: s.accountDisabledSubmit(true)},
		{Method: post, Path: "/accounts/:admin_id/enable", Need: RoleAdmin, handler: s.accountDisabledSubmit(false)},
		{Method: post, Path: "/accounts/:admin_id/role", Need: RoleAdmin, handler: s.accountRoleSubmit},
		{Method: post, Path: "/accounts/:admin_id/reset-password", Need: RoleAdmin, handler: s.accountResetSubmit},

		{Method: get, Path: "/tokens", Need: RoleViewer, handler: s.tokensPage},
		{Method: post, Path: "/tokens", Need: RoleViewer, handler: s.tokenCreateSubmit},
		{Method: post, Path: "/tokens/:token_id/revoke", Need: RoleViewer, handler: s.tokenRevokeSubmit},
	}
}

// pageChain refuses a page request as chain refuses an API request, as a page, and reads a
// posted form (readForm) where chain would bound the body: after the session and role checks,
// before the CSRF check that needs the form's token.
func (s *Server) pageChain(r pageRoute) gin.HandlerFunc {
	limit := s.bodyLimit(r.MaxBody)
	return func(c *gin.Context) {
		// A form another site's page submits is refused before anything else, the login form
		// too (which has no session, so no CSRF token, to check): browsers say where a request
		// comes from in Sec-Fetch-Site.
		if !safeMethod(c.Request.Method) && c.GetHeader("Sec-Fetch-Site") == "cross-site" {
			s.renderError(c, nil, errCrossSite)
			return
		}
		if r.Anonymous {
			boundBody(c, limit)
			if err := readForm(c); err != nil {
				s.renderError(c, nil, err)
				return
			}
			if err := requireUTF8(c); err != nil {
				s.renderError(c, nil, err)
				return
			}
			if err := r.handler(c, nil); err != nil {
				s.renderError(c, nil, err)
			}
			return
		}
		se, err := s.session(c)
		if err != nil {
			if c.Request.Method == http.MethodGet {
				c.Redirect(http.StatusSeeOther, "/login")
				return
			}
			s.renderError(c, nil, err)
			return
		}
		if se.Account.MustChangePassword && !r.DuringPasswordChange {
			if c.Request.Method == http.MethodGet {
				c.Redirect(http.StatusSeeOther, "/password")
				return
			}
			s.renderError(c, se, errMustChange)
			return
		}
		if err := se.Actor("").require(r.Need); err != nil {
			s.renderError(c, se, err)
			return
		}
		boundBody(c, limit)
		if err := readForm(c); err != nil {
			s.renderError(c, se, err)
			return
		}
		if err := checkCSRF(c, se); err != nil {
			s.renderError(c, se, err)
			return
		}
		if err := requireUTF8(c); err != nil {
			s.renderError(c, se, err)
			return
		}
		if err := r.handler(c, se); err != nil {
			s.renderError(c, se, err)
		}
	}
}

// errCrossSite refuses a form posted from another site's page.
var errCrossSite = contract.Errorf(contract.KindForbidden, "Forms of the console are only accepted from the console's own pages")

// renderError answers err as a page, with the status and detail the API would answer.
func (s *Server) renderError(c *gin.Context, se *Session, err error) {
	status, detail, wait := s.refusal(c, err)
	if wait > 0 {
		c.Header("Retry-After", strconv.Itoa(wait))
	}
	if c.Writer.Written() {
		return
	}
	v := viewFor(se, http.StatusText(status), "")
	v.Error = detail
	v.Data = map[string]any{"Status": status}
	s.render(c, status, "error", v)
	c.Abort()
}

// flashes are the messages a redirect after a form may ask the next page to show (?done=…):
// fixed texts, so a link cannot make the console say anything else.
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

// flash is the message a redirect asked for, "" when none.
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

// redirectDone sends the browser to path (which may end in a #fragment) after a form, with a
// flash message.
func redirectDone(c *gin.Context, path, done, arg string) {
	q := url.Values{"done": {done}}
	if arg != "" {
		q.Set("n", arg)
	}
	path, frag, _ := strings.Cut(path, "#")
	if frag != "" {
		frag = "#" + frag
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	c.Redirect(http.StatusSeeOther, path+sep+q.Encode()+frag)
}

// projectPath is a project page's path.
func projectPath(id string) string { return "/projects/" + url.PathEscape(id) }

// codePath is a code page's path.
func codePath(projectID, value string) string {
	return projectPath(projectID) + "/code?" + url.Values{"value": {value}}.Encode()
}
