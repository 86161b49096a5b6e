package console

import (
	"bytes"
	"cmp"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// Route is one endpoint of the admin API or one page, and what it demands of a request.
type Route struct {
	Method string
	Path   string // under APIPrefix for the API
	// Need is the least role that may call it; "" for Anonymous.
	Need Role
	// Anonymous routes need no session (the login and the API's OpenAPI document).
	Anonymous bool
	// DuringPasswordChange routes are open to a session whose account must change its
	// password first (the change itself, reading who one is, logging out); every other route
	// answers such a session 403.
	DuringPasswordChange bool
	// MaxBody is the most its body may hold (413 past it); ServerConfig.MaxBodyBytes when 0.
	MaxBody int64

	// api answers the route under APIPrefix, page at Path itself; either may be nil.
	api, page func(*gin.Context, *Session) error
}

// Routes lists the API's endpoints with the role each needs, for its reference and tests.
func (s *Server) Routes() []Route {
	var rs []Route
	for _, r := range s.routes() {
		if r.api != nil {
			r.api, r.page = nil, nil
			rs = append(rs, r)
		}
	}
	return rs
}

const get, post, put, del = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete

// routes are the API's endpoints and the console's pages, one entry for a path both serve; a
// page's form posts its CSRF token as csrf_token.
func (s *Server) routes() []Route {
	return []Route{
		{Method: get, Path: "/openapi.yaml", Anonymous: true, api: s.openAPIDoc},
		{Method: post, Path: "/session", Anonymous: true, MaxBody: loginBodyBytes, api: withJSON(false, s.login)},
		{Method: del, Path: "/session", Need: RoleViewer, DuringPasswordChange: true, api: s.logout},
		{Method: get, Path: "/me", Need: RoleViewer, DuringPasswordChange: true, api: s.me},
		{Method: post, Path: "/me/password", Need: RoleViewer, DuringPasswordChange: true, api: withJSON(false, s.changePassword)},
		{Method: get, Path: "/login", Anonymous: true, page: s.loginPage},
		{Method: post, Path: "/login", Anonymous: true, MaxBody: loginBodyBytes, page: s.loginSubmit},
		{Method: post, Path: "/logout", Need: RoleViewer, DuringPasswordChange: true, page: s.logout},
		{Method: get, Path: "/password", Need: RoleViewer, DuringPasswordChange: true, page: s.passwordPage},
		{Method: post, Path: "/password", Need: RoleViewer, DuringPasswordChange: true, page: s.passwordSubmit},

		{Method: get, Path: "/", Need: RoleViewer, page: s.dashboardPage},
		{Method: get, Path: "/projects", Need: RoleViewer, api: s.listProjects, page: s.projectsPage},
		{Method: post, Path: "/projects", Need: RoleOperator, api: withJSON(false, s.createProject), page: s.projectCreateSubmit},
		{Method: get, Path: "/projects/:project_id", Need: RoleViewer, api: s.getProject, page: s.projectPage},
		{Method: get, Path: "/projects/:project_id/statistics", Need: RoleViewer, api: s.getStatistics},
		{Method: post, Path: "/projects/:project_id/enable", Need: RoleOperator, api: s.setEnabled(true), page: s.setEnabled(true)},
		{Method: post, Path: "/projects/:project_id/disable", Need: RoleOperator, api: s.setEnabled(false), page: s.setEnabled(false)},
		{Method: put, Path: "/projects/:project_id/expiry", Need: RoleOperator, api: withJSON(false, s.setExpiry)},
		{Method: del, Path: "/projects/:project_id/expiry", Need: RoleOperator, api: s.clearExpiry},
		{Method: post, Path: "/projects/:project_id/expiry", Need: RoleOperator, page: s.expirySubmit},
		{Method: post, Path: "/projects/:project_id/expiry/clear", Need: RoleOperator, page: s.expiryClearSubmit},

		{Method: get, Path: "/projects/:project_id/keys", Need: RoleViewer, api: s.listKeys},
		{Method: post, Path: "/projects/:project_id/keys", Need: RoleOperator, api: withJSON(false, s.createKey), page: s.keyCreateSubmit},
		{Method: post, Path: "/projects/:project_id/keys/:key_id/revoke", Need: RoleOperator, page: s.keyRevokeSubmit},
		{Method: post, Path: "/keys/:key_id/revoke", Need: RoleOperator, api: s.revokeKey},
		{Method: put, Path: "/keys/:key_id/limit", Need: RoleOperator, api: withJSON(false, s.limitKey)},
		{Method: post, Path: "/keys/rewrap", Need: RoleAdmin, api: s.rewrapKeys},

		{Method: get, Path: "/projects/:project_id/codes", Need: RoleViewer, api: s.listCodes},
		{Method: get, Path: "/projects/:project_id/codes/:code", Need: RoleViewer, api: s.getCode},
		{Method: post, Path: "/projects/:project_id/codes/:code/disable", Need: RoleSupport, api: s.setCodeDisabled(true)},
		{Method: post, Path: "/projects/:project_id/codes/:code/enable", Need: RoleSupport, api: s.setCodeDisabled(false)},
		{Method: post, Path: "/projects/:project_id/codes/:code/verify", Need: RoleSupport, api: s.manual(contract.ActionVerify)},
		{Method: post, Path: "/projects/:project_id/codes/:code/reactivate", Need: RoleSupport, api: s.manual(contract.ActionReactivate)},
		{Method: get, Path: "/projects/:project_id/code", Need: RoleViewer, page: s.codePage},
		{Method: post, Path: "/projects/:project_id/code/disable", Need: RoleSupport, page: s.codeDisabledSubmit(true)},
		{Method: post, Path: "/projects/:project_id/code/enable", Need: RoleSupport, page: s.codeDisabledSubmit(false)},
		{Method: post, Path: "/projects/:project_id/code/verify", Need: RoleSupport, page: s.manualSubmit(contract.ActionVerify)},
		{Method: post, Path: "/projects/:project_id/code/reactivate", Need: RoleSupport, page: s.manualSubmit(contract.ActionReactivate)},
		{Method: get, Path: "/projects/:project_id/bulk-disable", Need: RoleOperator, api: s.bulkCount, page: s.bulkDisablePage},
		{Method: post, Path: "/projects/:project_id/bulk-disable", Need: RoleOperator, api: withJSON(false, s.bulkDisable), page: s.bulkDisableSubmit},
		{Method: post, Path: "/projects/:project_id/generate", Need: RoleOperator, api: withJSON(false, s.generate), page: s.generateSubmit},
		{Method: get, Path: "/batches", Need: RoleViewer, page: s.batchesPage},
		{Method: get, Path: "/projects/:project_id/batches", Need: RoleViewer, api: s.listBatches},
		{Method: get, Path: "/projects/:project_id/batches/:batch_id", Need: RoleViewer, api: s.getBatch},
		{Method: post, Path: "/projects/:project_id/batches/:batch_id/cancel", Need: RoleOperator, api: s.cancelBatch, page: s.cancelBatch},
		{Method: post, Path: "/projects/:project_id/batches/:batch_id/revoke", Need: RoleOperator, api: withJSON(true, s.revokeBatch), page: s.revokeBatchSubmit},
		{Method: post, Path: "/projects/:project_id/import", Need: RoleOperator, MaxBody: s.cfg.MaxImportBytes, api: s.importCodes},
		// The CSV, and the form's other fields and framing beside it.
		{Method: post, Path: "/projects/:project_id/import", Need: RoleOperator, MaxBody: s.cfg.MaxImportBytes + 64<<10, page: s.importSubmit},
		{Method: get, Path: "/projects/:project_id/export", Need: RoleOperator, api: s.export, page: s.export},

		{Method: get, Path: "/logs", Need: RoleViewer, api: s.listLogs, page: s.logsPage},
		{Method: get, Path: "/logs.csv", Need: RoleOperator, api: s.exportLogs, page: s.exportLogs},
		{Method: get, Path: "/logs/partitions", Need: RoleViewer, api: s.listLogPartitions},
		{Method: post, Path: "/logs/maintain", Need: RoleAdmin, api: withJSON(true, s.maintainLogs)},

		{Method: get, Path: "/audit", Need: RoleViewer, api: s.listAudit, page: s.auditPage},
		{Method: get, Path: "/audit.csv", Need: RoleOperator, api: s.exportAudit, page: s.exportAudit},
		{Method: get, Path: "/audit/verify", Need: RoleViewer, api: s.verifyAudit},
		{Method: post, Path: "/audit/prune", Need: RoleAdmin, api: withJSON(false, s.pruneAudit)},

		{Method: get, Path: "/docs", Need: RoleViewer, page: s.docsPage},
		{Method: get, Path: "/docs/api", Need: RoleViewer, page: s.apiGuidePage},
		{Method: get, Path: "/docs/api.md", Need: RoleViewer, page: s.apiGuideMarkdown},
		{Method: get, Path: "/docs/client-openapi.yaml", Need: RoleViewer, page: s.clientOpenAPI},

		{Method: get, Path: "/accounts", Need: RoleAdmin, api: s.listAccounts, page: s.accountsPage},
		{Method: post, Path: "/accounts", Need: RoleAdmin, api: withJSON(false, s.createAccount), page: s.accountCreateSubmit},
		{Method: post, Path: "/accounts/:admin_id/disable", Need: RoleAdmin, api: s.setAccountDisabled(true), page: s.setAccountDisabled(true)},
		{Method: post, Path: "/accounts/:admin_id/enable", Need: RoleAdmin, api: s.setAccountDisabled(false), page: s.setAccountDisabled(false)},
		{Method: put, Path: "/accounts/:admin_id/role", Need: RoleAdmin, api: withJSON(false, s.setAccountRole)},
		{Method: post, Path: "/accounts/:admin_id/role", Need: RoleAdmin, page: s.accountRoleSubmit},
		{Method: post, Path: "/accounts/:admin_id/reset-password", Need: RoleAdmin, api: withJSON(true, s.resetPassword), page: s.accountResetSubmit},

		{Method: get, Path: "/tokens", Need: RoleViewer, api: s.listTokens, page: s.tokensPage},
		{Method: post, Path: "/tokens", Need: RoleViewer, api: withJSON(false, s.createToken), page: s.tokenCreateSubmit},
		{Method: post, Path: "/tokens/:token_id/revoke", Need: RoleViewer, api: s.revokeToken, page: s.revokeToken},
	}
}

// errRedirected: the gate answered with a redirect; nothing is left to answer.
var errRedirected = errors.New("redirected")

// gate runs a route's API or page handler once admitted, answering a refusal as JSON or as a page.
func (s *Server) gate(r Route, page bool) gin.HandlerFunc {
	limit := cmp.Or(r.MaxBody, s.cfg.MaxBodyBytes)
	handler := r.api
	if page {
		handler = r.page
	}
	return func(c *gin.Context) {
		se, err := s.admit(c, r, page, limit)
		if err == nil {
			err = handler(c, se)
		}
		switch {
		case err == nil, errors.Is(err, errRedirected):
		case page:
			s.renderError(c, se, err)
		default:
			s.writeError(c, err)
		}
	}
}

// admit checks a request in the order it is refused: a page's form from another site 403; no
// session 401 and a password still to change 403 (a page GET is redirected; an API token does
// not hang on the password); a role too low 403. Only then is the body read, at most limit:
// the form, the CSRF token 403, a query or form not UTF-8 400.
func (s *Server) admit(c *gin.Context, r Route, page bool, limit int64) (*Session, error) {
	if page && !safeMethod(c.Request.Method) && c.GetHeader("Sec-Fetch-Site") == "cross-site" {
		return nil, errCrossSite
	}
	var se *Session
	if !r.Anonymous {
		var err error
		if se, err = s.session(c); err != nil {
			return nil, redirectGet(c, page, "/login", err)
		}
		if se.Account.MustChangePassword && !r.DuringPasswordChange && (page || se.apiToken == nil) {
			return se, redirectGet(c, page, "/password", errMustChange)
		}
		if err := se.Actor("").require(r.Need); err != nil {
			return se, err
		}
	}
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, limit)
	if page {
		if err := readForm(c); err != nil {
			return se, err
		}
	}
	if se != nil {
		if err := checkCSRF(c, se); err != nil {
			return se, err
		}
	}
	return se, requireUTF8(c)
}

func isPage(c *gin.Context) bool { return !strings.HasPrefix(c.FullPath(), APIPrefix+"/") }

// redirectGet sends a page's GET to path instead of answering err.
func redirectGet(c *gin.Context, page bool, path string, err error) error {
	if page && c.Request.Method == http.MethodGet {
		c.Redirect(http.StatusSeeOther, path)
		return errRedirected
	}
	return err
}

// errCrossSite refuses a form posted from another site's page (Sec-Fetch-Site).
var errCrossSite = contract.Errorf(contract.KindForbidden, "Forms of the console are only accepted from the console's own pages")

// errMustChange refuses a session whose account has not yet replaced its one-time password.
var errMustChange = contract.Errorf(contract.KindForbidden,
	"Change your password first: POST "+APIPrefix+"/me/password with current_password and new_password")

// CSRFHeader carries the session's CSRF token on every unsafe request, a form's field
// CSRFField: the second lock beside the SameSite=Strict cookie.
const (
	CSRFHeader = "X-CSRF-Token"
	CSRFField  = "csrf_token"
)

var errCSRF = contract.Errorf(contract.KindForbidden, "Missing or invalid CSRF token: send the session's csrf_token in the X-CSRF-Token header")

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// checkCSRF refuses an unsafe cookie-session request without its CSRF token (constant time).
func checkCSRF(c *gin.Context, se *Session) error {
	if safeMethod(c.Request.Method) || se.apiToken != nil {
		return nil
	}
	got := c.GetHeader(CSRFHeader)
	if got == "" {
		if mt, _, _ := mime.ParseMediaType(c.ContentType()); mt == "application/x-www-form-urlencoded" || mt == "multipart/form-data" {
			got = c.PostForm(CSRFField)
		}
	}
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(se.CSRFToken())) != 1 {
		return errCSRF
	}
	return nil
}

// loginBodyBytes bounds a login's body, a password of maxPasswordLen bytes escaped several times over.
const loginBodyBytes = 4 << 10

// readForm parses a posted form within the body's bound (413 past it) for the checks and handler.
func readForm(c *gin.Context) error {
	switch mt, _, _ := mime.ParseMediaType(c.ContentType()); mt {
	case "application/x-www-form-urlencoded":
		// A pair with a malformed escape is dropped, as gin's c.PostForm drops it; only the
		// size is refused.
		return errTooLarge(c.Request.ParseForm())
	case "multipart/form-data":
		err := c.Request.ParseMultipartForm(8 << 20)
		if err == nil {
			return nil
		}
		if tooLarge := errTooLarge(err); tooLarge != nil {
			return tooLarge
		}
		return contract.Errorf(contract.KindInvalid, "The form cannot be read")
	}
	return nil
}

// errTooLarge is the 413 of a body read past its limit, nil when err is not that.
func errTooLarge(err error) error {
	var tooLarge *http.MaxBytesError
	if !errors.As(err, &tooLarge) {
		return nil
	}
	return contract.Errorf(contract.KindTooLarge, "Request body must be at most %d bytes", tooLarge.Limit)
}

// requireUTF8 refuses (400) a query or posted form not valid UTF-8 once decoded.
func requireUTF8(c *gin.Context) error {
	if err := contract.ValidateQueryUTF8(c.Request.URL.RawQuery); err != nil {
		return err
	}
	if err := contract.ValidateFormUTF8(c.Request.PostForm); err != nil {
		return err
	}
	if f := c.Request.MultipartForm; f != nil {
		return contract.ValidateFormUTF8(f.Value)
	}
	return nil
}

var errNotJSON = &contract.Error{Kind: contract.KindUnsupportedMediaType, Message: "Request body must be JSON (Content-Type: application/json)"}

// bindJSON reads one JSON object into v: application/json, bounded (by admit), valid UTF-8,
// no unknown fields.
func bindJSON(c *gin.Context, v any) error {
	if mt, _, _ := mime.ParseMediaType(c.ContentType()); mt != "application/json" {
		return errNotJSON
	}
	body, err := io.ReadAll(c.Request.Body)
	if tooLarge := errTooLarge(err); tooLarge != nil {
		return tooLarge
	}
	if err != nil {
		return contract.Errorf(contract.KindInvalid, "Could not read the request body")
	}
	// Before decoding: encoding/json would turn invalid UTF-8 and lone surrogates into U+FFFD.
	if err := contract.ValidateBodyUTF8(body); err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return contract.Errorf(contract.KindInvalid, "Field %s has the wrong type", te.Field)
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return contract.Errorf(contract.KindInvalid, "Malformed JSON body: invalid syntax")
		}
		return contract.Errorf(contract.KindInvalid, "Malformed JSON body: %s", err)
	}
	if d.More() {
		return contract.Errorf(contract.KindInvalid, "Malformed JSON body: one object expected")
	}
	return nil
}

// pathValue is a path parameter decoded with path rules (routing runs on the escaped path).
func pathValue(c *gin.Context, name string) (string, error) {
	v, err := url.PathUnescape(c.Param(name))
	if err != nil {
		return "", contract.Errorf(contract.KindInvalid, "Path parameter %s is not valid percent-encoding", name)
	}
	return v, nil
}

func queryInt(c *gin.Context, name string, def int) (int, error) {
	v := c.Query(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, contract.Errorf(contract.KindInvalid, "Query parameter %s must be an integer", name)
	}
	return n, nil
}

// queryTime reads an optional time query parameter: Unix seconds or RFC 3339, or a page's
// <input type="datetime-local"> (no zone: the pages show UTC, so it is read as UTC).
func queryTime(c *gin.Context, name string) (time.Time, error) {
	v := c.Query(name)
	if v == "" {
		return time.Time{}, nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Unix(n, 0), nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if t, err := parseDateTimeLocal(v); err == nil {
		return t, nil
	}
	return time.Time{}, contract.Errorf(contract.KindInvalid, "Query parameter %s must be Unix seconds or RFC 3339 (or YYYY-MM-DDTHH:MM in UTC)", name)
}

// dateTimeLocal is the value format of an <input type="datetime-local">, read as UTC.
const dateTimeLocal = "2006-01-02T15:04"

// parseDateTimeLocal reads a datetime-local value, with or without seconds, as UTC.
func parseDateTimeLocal(v string) (time.Time, error) {
	t, err := time.Parse(dateTimeLocal, v)
	if err != nil {
		t, err = time.Parse(dateTimeLocal+":05", v)
	}
	return t, err
}

// queryLimit reads a search's limit: 1 to 1000, 100 when absent.
func queryLimit(c *gin.Context) (int, error) {
	n, err := queryInt(c, "limit", 100)
	if err == nil && (n < 1 || n > 1000) {
		err = contract.Errorf(contract.KindInvalid, "limit must be 1 to 1000")
	}
	return n, err
}

// kept is the query's parameters among names that are set, for links that keep filters.
func kept(c *gin.Context, names ...string) url.Values {
	q := url.Values{}
	for _, k := range names {
		if v := c.Query(k); v != "" {
			q.Set(k, v)
		}
	}
	return q
}

// logFilters and auditFilters are the query parameters a log or an audit search is filtered by.
var (
	logFilters   = []string{"project_id", "code", "action", "result", "reason", "verified_by", "ip"}
	auditFilters = []string{"admin", "action", "target_kind", "target_id", "project_id", "since", "until"}
)

// searchLogs reads the page of logs the request's query asks for, for the API and the page.
func (s *Server) searchLogs(c *gin.Context) (contract.LogFilter, LogPage, error) {
	q, err := logSearchQuery(c)
	if err != nil {
		return q, LogPage{}, err
	}
	page, err := s.svc.SearchLogs(c.Request.Context(), q)
	return q, page, err
}

// logSearchQuery reads a log search from the query: the logFilters, from, to, after, limit.
func logSearchQuery(c *gin.Context) (contract.LogFilter, error) {
	q := contract.LogFilter{ProjectID: c.Query("project_id"), Code: c.Query("code"), Action: c.Query("action"),
		Result: c.Query("result"), Reason: c.Query("reason"), VerifiedBy: c.Query("verified_by"), IP: c.Query("ip"),
		After: c.Query("after")}
	var err error
	if q.From, err = queryTime(c, "from"); err != nil {
		return q, err
	}
	if q.To, err = queryTime(c, "to"); err != nil {
		return q, err
	}
	q.Limit, err = queryLimit(c)
	return q, err
}

// auditFilterQuery reads an audit search from the query: the auditFilters, before, limit.
func auditFilterQuery(c *gin.Context) (contract.AuditFilter, error) {
	f := contract.AuditFilter{
		AdminUsername: c.Query("admin"), Action: c.Query("action"), TargetKind: c.Query("target_kind"),
		TargetID: c.Query("target_id"), ProjectID: c.Query("project_id"),
	}
	var err error
	if f.Since, err = queryTime(c, "since"); err != nil {
		return f, err
	}
	if f.Until, err = queryTime(c, "until"); err != nil {
		return f, err
	}
	before, err := queryInt(c, "before", 0)
	if err != nil {
		return f, err
	}
	f.BeforeSeq = int64(before)
	f.Limit, err = queryLimit(c)
	return f, err
}

func trimForm(c *gin.Context, name string) string { return strings.TrimSpace(c.PostForm(name)) }
