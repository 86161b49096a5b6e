package console

import (
	_ "embed" // the OpenAPI document is embedded
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// The admin API's OpenAPI 3.1 document, the one the tests hold against Routes().
//
//go:embed openapi.yaml
var openAPI []byte

// OpenAPIContentType is the media type the document is served with (RFC 9512).
const OpenAPIContentType = "application/yaml"

// OpenAPI returns a copy of the admin API's OpenAPI document, internal/console/openapi.yaml.
func OpenAPI() []byte { return append([]byte(nil), openAPI...) }

// reply answers a result as JSON with status, or returns its error: reply(c, 200)(s.svc.X(…)).
func reply(c *gin.Context, status int) func(any, error) error {
	return func(v any, err error) error {
		if err != nil {
			return err
		}
		c.JSON(status, v)
		return nil
	}
}

// answer answers a change: the API with body, a page with a redirect to path and the flash done.
func answer(c *gin.Context, err error, body any, path, done string) error {
	if isPage(c) {
		return redirectDone(c, err, path, done, "")
	}
	return reply(c, http.StatusOK)(body, err)
}

// items answers a list as {"items": […]}.
func items(c *gin.Context) func(any, error) error {
	return func(v any, err error) error { return reply(c, http.StatusOK)(gin.H{"items": v}, err) }
}

// convert is ts each turned by f, [] (never null in JSON) when none.
func convert[T, U any](ts []T, f func(T) U) []U {
	out := make([]U, 0, len(ts))
	for _, t := range ts {
		out = append(out, f(t))
	}
	return out
}

// withJSON is h given the request's JSON body (bindJSON); with optional, no body reads as {}.
func withJSON[B any](optional bool, h func(*gin.Context, *Session, B) error) func(*gin.Context, *Session) error {
	return func(c *gin.Context, se *Session) error {
		var b B
		if !optional || c.Request.ContentLength != 0 {
			if err := bindJSON(c, &b); err != nil {
				return err
			}
		}
		return h(c, se, b)
	}
}

func (s *Server) openAPIDoc(c *gin.Context, _ *Session) error {
	c.Data(http.StatusOK, OpenAPIContentType, openAPI)
	return nil
}

// me answers a login, GET /me and a password change: who, the CSRF token, the end.
func (s *Server) me(c *gin.Context, se *Session) error {
	c.JSON(http.StatusOK, gin.H{"account": accountOf(se.Account), "csrf_token": se.CSRFToken(), "expires_at": se.ExpiresAt.Unix()})
	return nil
}

// started sends a new session's cookie and answers it.
func (s *Server) started(c *gin.Context) func(*Session, string, error) error {
	return func(se *Session, token string, err error) error {
		if err != nil {
			return err
		}
		s.setSessionCookie(c, token, false)
		return s.me(c, se)
	}
}

func (s *Server) login(c *gin.Context, _ *Session, b struct {
	Username string `json:"username"`
	Password string `json:"password"`
}) error {
	return s.started(c)(s.svc.Login(c.Request.Context(), b.Username, b.Password, c.Request.UserAgent(), s.proxies.clientIP(c.Request)))
}

// logout ends the session: the API answers 204, a page goes to the login.
func (s *Server) logout(c *gin.Context, se *Session) error {
	if err := s.svc.Logout(c.Request.Context(), se, s.proxies.clientIP(c.Request)); err != nil {
		return err
	}
	s.setSessionCookie(c, "", true)
	if isPage(c) {
		c.Redirect(http.StatusSeeOther, "/login")
	} else {
		c.Status(http.StatusNoContent)
	}
	return nil
}

func (s *Server) changePassword(c *gin.Context, se *Session, b struct {
	Current string `json:"current_password"`
	New     string `json:"new_password"`
}) error {
	return s.started(c)(s.svc.ChangePassword(c.Request.Context(), se, b.Current, b.New, c.Request.UserAgent(), s.proxies.clientIP(c.Request)))
}

func (s *Server) listProjects(c *gin.Context, se *Session) error {
	return items(c)(s.ops.Projects(c.Request.Context()))
}

func (s *Server) createProject(c *gin.Context, se *Session, b struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	ExpiresAt   *int64 `json:"expires_at"`
}) error {
	if b.Name == "" {
		return contract.Errorf(contract.KindInvalid, "Field name is required")
	}
	return reply(c, http.StatusCreated)(s.svc.CreateProject(c.Request.Context(), s.actor(c, se),
		contract.NewProject{Name: b.Name, Description: b.Description, ExpiresAt: b.ExpiresAt}))
}

func (s *Server) getProject(c *gin.Context, se *Session) error {
	return reply(c, http.StatusOK)(s.ops.Project(c.Request.Context(), c.Param("project_id"), s.now()))
}

func (s *Server) getStatistics(c *gin.Context, se *Session) error {
	return reply(c, http.StatusOK)(s.ops.Statistics(c.Request.Context(), c.Param("project_id"), s.now()))
}

// projectChange answers a change of the path's project with the project as it is now, or a
// page with the project's page and the flash done.
func (s *Server) projectChange(change func(c *gin.Context, a Actor, id string) error, done string) func(*gin.Context, *Session) error {
	return func(c *gin.Context, se *Session) error {
		id := c.Param("project_id")
		if err := change(c, s.actor(c, se), id); err != nil {
			return err
		}
		if isPage(c) {
			return redirectDone(c, nil, projectPath(id), done, "")
		}
		return s.getProject(c, se)
	}
}

// setEnabled enables or disables a project; a page's disable needs the project's name typed.
func (s *Server) setEnabled(enabled bool) func(*gin.Context, *Session) error {
	return s.projectChange(func(c *gin.Context, a Actor, id string) error {
		if isPage(c) && !enabled {
			if err := s.confirmProjectName(c, id); err != nil {
				return err
			}
		}
		return s.svc.SetProjectEnabled(c.Request.Context(), a, id, enabled)
	}, pick(enabled, "project_enabled", "project_disabled"))
}

func (s *Server) setExpiry(c *gin.Context, se *Session, b struct {
	ExpiresAt *int64 `json:"expires_at"`
}) error {
	if b.ExpiresAt == nil {
		return contract.Errorf(contract.KindInvalid, "Field expires_at is required (Unix seconds); DELETE the expiry to clear it")
	}
	return s.projectChange(func(c *gin.Context, a Actor, id string) error {
		return s.svc.SetProjectExpiry(c.Request.Context(), a, id, b.ExpiresAt)
	}, "")(c, se)
}

func (s *Server) clearExpiry(c *gin.Context, se *Session) error {
	return s.projectChange(func(c *gin.Context, a Actor, id string) error {
		return s.svc.SetProjectExpiry(c.Request.Context(), a, id, nil)
	}, "")(c, se)
}

func (s *Server) listKeys(c *gin.Context, se *Session) error {
	return items(c)(s.ops.APIKeys(c.Request.Context(), c.Param("project_id")))
}

type limitBody struct {
	RatePerSec float64 `json:"rate_per_sec"`
	Burst      int     `json:"burst"`
}

func (s *Server) createKey(c *gin.Context, se *Session, b limitBody) error {
	k, err := s.svc.CreateAPIKey(c.Request.Context(), s.actor(c, se), c.Param("project_id"), b.RatePerSec, b.Burst)
	// The one time the secret is shown.
	return reply(c, http.StatusCreated)(gin.H{"key_id": k.ID, "project_id": k.ProjectID, "secret": k.Secret,
		"rate_per_sec": k.RatePerSec, "burst": k.Burst}, err)
}

func (s *Server) revokeKey(c *gin.Context, se *Session) error {
	id := c.Param("key_id")
	err := s.svc.RevokeAPIKey(c.Request.Context(), s.actor(c, se), id)
	return reply(c, http.StatusOK)(gin.H{"key_id": id, "revoked": true}, err)
}

func (s *Server) limitKey(c *gin.Context, se *Session, b limitBody) error {
	id := c.Param("key_id")
	err := s.svc.SetAPIKeyRateLimit(c.Request.Context(), s.actor(c, se), id, b.RatePerSec, b.Burst)
	return reply(c, http.StatusOK)(gin.H{"key_id": id, "rate_per_sec": b.RatePerSec, "burst": b.Burst}, err)
}

// rewrapKeys answers a rewrap's counts, with "error" when some secret did not open.
func (s *Server) rewrapKeys(c *gin.Context, se *Session) error {
	res, active, err := s.svc.RewrapKeys(c.Request.Context(), s.actor(c, se))
	body := gin.H{"active_master_key": active, "sealed": res.Sealed, "rewrapped": res.Rewrapped, "current": res.Current, "failed": res.Failed}
	if err != nil && res.Failed > 0 {
		body["error"], err = err.Error(), nil
	}
	return reply(c, http.StatusOK)(body, err)
}

// listCodes answers a page of codes: by keyset with ?cursor=, else by page number.
func (s *Server) listCodes(c *gin.Context, se *Session) error {
	var (
		q   contract.ListQuery
		err error
	)
	if v := c.Query("status"); v != "" {
		if q.State, err = contract.ParseState(v); err != nil {
			return contract.Errorf(contract.KindInvalid, "Query parameter status must be unused, used, disabled or expired")
		}
	}
	q.Search = c.Query("search")
	if err := contract.ValidateText("search", q.Search, contract.MaxCodeLen); err != nil {
		return invalid(err)
	}
	if q.PageSize, err = queryInt(c, "page_size", contract.DefaultPageSize); err != nil {
		return err
	}
	ctx, pid := c.Request.Context(), c.Param("project_id")
	if cursor, keyset := c.GetQuery("cursor"); keyset {
		if q.PageSize < 1 || q.PageSize > contract.MaxPageSize {
			return contract.Errorf(contract.KindInvalid, "page_size must be 1 to %d", contract.MaxPageSize)
		}
		return reply(c, http.StatusOK)(s.ops.ListCodesAfter(ctx, pid,
			contract.CursorQuery{State: q.State, Search: q.Search, Cursor: cursor, PageSize: q.PageSize}, s.now()))
	}
	if q.Page, err = queryInt(c, "page", 1); err != nil {
		return err
	}
	if q.Page < 1 || q.PageSize < 1 || q.PageSize > contract.MaxPageSize {
		return contract.Errorf(contract.KindInvalid, "page must be at least 1 and page_size 1 to %d", contract.MaxPageSize)
	}
	return reply(c, http.StatusOK)(s.ops.ListCodes(ctx, pid, q, s.now()))
}

func (s *Server) getCode(c *gin.Context, se *Session) error {
	value, err := pathValue(c, "code")
	if err != nil {
		return err
	}
	return reply(c, http.StatusOK)(s.ops.Code(c.Request.Context(), c.Param("project_id"), value, s.now()))
}

func (s *Server) setCodeDisabled(disabled bool) func(*gin.Context, *Session) error {
	return func(c *gin.Context, se *Session) error {
		value, err := pathValue(c, "code")
		if err != nil {
			return err
		}
		if err := s.svc.SetCodeDisabled(c.Request.Context(), s.actor(c, se), c.Param("project_id"), value, disabled); err != nil {
			return err
		}
		return s.getCode(c, se)
	}
}

// manual verifies or reactivates the path's code by hand, with the body's reason.
func (s *Server) manual(action contract.Action) func(*gin.Context, *Session) error {
	return withJSON(false, func(c *gin.Context, se *Session, b struct {
		Reason string `json:"reason"`
	}) error {
		value, err := pathValue(c, "code")
		if err != nil {
			return err
		}
		return reply(c, http.StatusOK)(s.svc.manual(c.Request.Context(), s.actor(c, se), action, c.Param("project_id"), value, b.Reason))
	})
}

// importCodes imports a CSV body (?dry_run=true only checks it) and answers the report.
func (s *Server) importCodes(c *gin.Context, se *Session) error {
	var dry bool
	switch c.Query("dry_run") {
	case "", "false", "0":
	case "true", "1":
		dry = true
	default:
		return contract.Errorf(contract.KindInvalid, "Query parameter dry_run must be true or false")
	}
	body := http.MaxBytesReader(c.Writer, c.Request.Body, s.cfg.MaxImportBytes)
	rep, err := s.svc.Import(c.Request.Context(), s.actor(c, se), c.Param("project_id"), body, dry)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		if dry {
			return contract.Errorf(contract.KindTooLarge, "The CSV must be at most %d bytes", s.cfg.MaxImportBytes)
		}
		return contract.Errorf(contract.KindTooLarge, "The CSV must be at most %d bytes; codes imported before the limit: %d", s.cfg.MaxImportBytes, rep.Inserted)
	}
	return reply(c, http.StatusOK)(rep, err)
}

func (s *Server) export(c *gin.Context, se *Session) error {
	pid := c.Param("project_id")
	return s.streamCSV(c, "codes-"+pid+".csv")(s.svc.Export(c.Request.Context(), s.actor(c, se), pid))
}

// generate starts a generation batch and answers 202 with it (its progress: its Location).
func (s *Server) generate(c *gin.Context, se *Session, b struct {
	Name      string `json:"name"`
	Count     int    `json:"count"`
	Length    int    `json:"length"`
	Charset   string `json:"charset"`
	Prefix    string `json:"prefix"`
	Suffix    string `json:"suffix"`
	ExpiresAt *int64 `json:"expires_at"`
}) error {
	if b.Length == 0 {
		b.Length = 12
	}
	pid := c.Param("project_id")
	batch, err := s.svc.StartGenerate(c.Request.Context(), s.actor(c, se), pid, b.Name, contract.GenerateSpec{
		Count: b.Count, Length: b.Length, Charset: b.Charset, Prefix: b.Prefix, Suffix: b.Suffix, ExpiresAt: b.ExpiresAt,
	})
	if err == nil {
		c.Header("Location", APIPrefix+"/projects/"+pid+"/batches/"+batch.ID)
	}
	return reply(c, http.StatusAccepted)(batch, err)
}

func (s *Server) listBatches(c *gin.Context, se *Session) error {
	return items(c)(s.ops.Batches(c.Request.Context(), c.Param("project_id"), batchesShown))
}

func (s *Server) getBatch(c *gin.Context, se *Session) error {
	return reply(c, http.StatusOK)(s.ops.Batch(c.Request.Context(), c.Param("project_id"), c.Param("batch_id")))
}

func (s *Server) cancelBatch(c *gin.Context, se *Session) error {
	pid := c.Param("project_id")
	b, err := s.svc.CancelBatch(c.Request.Context(), s.actor(c, se), pid, c.Param("batch_id"))
	return answer(c, err, b, projectPath(pid)+"?tab=batches", "batch_cancelled")
}

// revokeBatch disables a batch's codes; with expected_count, 409 when the count is out of date.
func (s *Server) revokeBatch(c *gin.Context, se *Session, b struct {
	ExpectedCount *int64 `json:"expected_count"`
}) error {
	n, err := s.svc.RevokeBatch(c.Request.Context(), s.actor(c, se), c.Param("project_id"), c.Param("batch_id"), b.ExpectedCount)
	if errors.Is(err, contract.ErrCountChanged) {
		return s.answerChanged(c, se, contract.CodeFilter{BatchID: c.Param("batch_id")}, err)
	}
	return reply(c, http.StatusOK)(gin.H{"disabled": n}, err)
}

// bulkFilter is a bulk disable's filter, from the query (the count) or a JSON body.
type bulkFilter struct {
	BatchID string `json:"batch_id" form:"batch_id"`
	Status  string `json:"status" form:"status"`
	Search  string `json:"search" form:"search"`
}

func (f bulkFilter) filter() (contract.CodeFilter, error) {
	out := contract.CodeFilter{BatchID: f.BatchID, Search: f.Search}
	if f.Status != "" {
		st, err := contract.ParseState(f.Status)
		if err != nil {
			return out, contract.Errorf(contract.KindInvalid, "Status must be unused, used or expired")
		}
		out.State = st
	}
	return out, nil
}

// bulkCount answers how many codes a bulk disable would disable, with the filter to confirm.
func (s *Server) bulkCount(c *gin.Context, se *Session) error {
	q := bulkFilter{BatchID: c.Query("batch_id"), Status: c.Query("status"), Search: c.Query("search")}
	f, err := q.filter()
	if err != nil {
		return err
	}
	n, err := s.ops.CountMatching(c.Request.Context(), c.Param("project_id"), f, s.now())
	return reply(c, http.StatusOK)(gin.H{"count": n, "filter": q}, err)
}

// bulkDisable disables the codes the filter selects while expected_count is still their count.
func (s *Server) bulkDisable(c *gin.Context, se *Session, b struct {
	bulkFilter
	ExpectedCount *int64 `json:"expected_count"`
}) error {
	if b.ExpectedCount == nil {
		return contract.Errorf(contract.KindInvalid, "Field expected_count is required: read the count first (GET .../bulk-disable)")
	}
	f, err := b.filter()
	if err != nil {
		return err
	}
	n, err := s.svc.BulkDisable(c.Request.Context(), s.actor(c, se), c.Param("project_id"), f, *b.ExpectedCount)
	if errors.Is(err, contract.ErrCountChanged) {
		return s.answerChanged(c, se, f, err)
	}
	return reply(c, http.StatusOK)(gin.H{"disabled": n}, err)
}

// answerChanged answers a stale count 409 with the count filter f selects now, to confirm again.
func (s *Server) answerChanged(c *gin.Context, se *Session, f contract.CodeFilter, changed error) error {
	n, err := s.ops.CountMatching(c.Request.Context(), c.Param("project_id"), f, s.now())
	if err != nil {
		return err
	}
	status, detail := s.refusal(c, changed)
	c.AbortWithStatusJSON(status, gin.H{"detail": detail, "count": n})
	return nil
}

// logItem is a log as the API shows it: the time in Unix seconds and RFC 3339.
type logItem struct {
	contract.LogRecord
	VerifiedAt     int64  `json:"verified_at"`
	VerifiedAtText string `json:"verified_at_rfc3339"`
}

func (s *Server) listLogs(c *gin.Context, se *Session) error {
	_, page, err := s.searchLogs(c)
	if err != nil {
		return err
	}
	body := gin.H{"from": page.From.Unix(), "to": page.To.Unix(), "items": convert(page.Items, func(r contract.LogRecord) logItem {
		return logItem{LogRecord: r, VerifiedAt: r.VerifiedAt.Unix(), VerifiedAtText: r.VerifiedAt.UTC().Format(time.RFC3339Nano)}
	})}
	if page.NextAfter != "" {
		body["next_after"] = page.NextAfter
	}
	c.JSON(http.StatusOK, body)
	return nil
}

// exportLogs streams every log matching the query as CSV; the export is in the audit log.
func (s *Server) exportLogs(c *gin.Context, se *Session) error {
	q, err := logSearchQuery(c)
	if err != nil {
		return err
	}
	return s.streamCSV(c, "verification-logs.csv")(s.svc.ExportLogs(c.Request.Context(), s.actor(c, se), q))
}

func (s *Server) listLogPartitions(c *gin.Context, se *Session) error {
	ps, err := s.st.LogPartitions(c.Request.Context())
	if err != nil {
		return err
	}
	type partition struct {
		Name    string `json:"name"`
		From    *int64 `json:"from"`
		To      *int64 `json:"to"`
		Default bool   `json:"default"`
	}
	return items(c)(convert(ps, func(p contract.LogPartition) partition {
		if p.Default {
			return partition{Name: p.Name, Default: true}
		}
		return partition{Name: p.Name, From: new(p.From.Unix()), To: new(p.To.Unix())}
	}), nil)
}

func (s *Server) maintainLogs(c *gin.Context, se *Session, b struct {
	RetentionDays *int `json:"retention_days"`
	Ahead         *int `json:"ahead"`
}) error {
	res, err := s.svc.MaintainLogs(c.Request.Context(), s.actor(c, se), b.RetentionDays, b.Ahead)
	// Lists are [] in JSON, never null.
	return reply(c, http.StatusOK)(gin.H{"busy": res.Busy, "created": append([]string{}, res.Created...),
		"dropped": append([]string{}, res.Dropped...), "moved": res.Moved, "purged": res.Purged}, err)
}

// auditItem is an audit row as the API shows it: the time in Unix seconds, the hashes in hex.
type auditItem struct {
	contract.AuditRecord
	At       int64  `json:"at"`
	PrevHash string `json:"prev_hash"`
	Hash     string `json:"hash"`
}

func (s *Server) listAudit(c *gin.Context, se *Session) error {
	f, err := auditFilterQuery(c)
	if err != nil {
		return err
	}
	rows, err := s.st.AdminAudit(c.Request.Context(), f)
	if err != nil {
		return err
	}
	body := gin.H{"items": convert(rows, func(r contract.AuditRecord) auditItem {
		return auditItem{AuditRecord: r, At: r.At.Unix(), PrevHash: hexOf(r.PrevHash), Hash: hexOf(r.Hash)}
	})}
	// Keyset paging: the next page is the rows before the last one shown.
	if len(rows) == f.Limit {
		body["next_before"] = rows[len(rows)-1].Seq
	}
	c.JSON(http.StatusOK, body)
	return nil
}

func (s *Server) verifyAudit(c *gin.Context, _ *Session) error {
	return reply(c, http.StatusOK)(s.svc.VerifyChain(c.Request.Context()))
}

func (s *Server) pruneAudit(c *gin.Context, se *Session, b struct {
	KeepDays int `json:"keep_days"`
}) error {
	if b.KeepDays < 1 {
		return contract.Errorf(contract.KindInvalid, "keep_days must be at least 1")
	}
	n, err := s.svc.PruneAudit(c.Request.Context(), s.actor(c, se), time.Duration(b.KeepDays)*24*time.Hour)
	return reply(c, http.StatusOK)(gin.H{"deleted": n}, err)
}

// exportAudit streams the audit rows matching the query as CSV; the export is itself recorded.
func (s *Server) exportAudit(c *gin.Context, se *Session) error {
	f, err := auditFilterQuery(c)
	if err != nil {
		return err
	}
	return s.streamCSV(c, "admin-audit.csv")(s.svc.ExportAudit(c.Request.Context(), s.actor(c, se), f))
}

// streamCSV answers a CSV download written by write once its checks passed. A failure once
// streaming cuts the connection, so a client never takes a truncated file for a whole one.
func (s *Server) streamCSV(c *gin.Context, filename string) func(func(io.Writer) (int, error), error) error {
	return func(write func(io.Writer) (int, error), err error) error {
		if err != nil {
			return err
		}
		c.Header("Content-Type", "text/csv; charset=utf-8")
		c.Header("Content-Disposition", `attachment; filename="`+filename+`"`)
		c.Status(http.StatusOK)
		n, err := write(c.Writer)
		if err == nil {
			return nil
		}
		if !c.Writer.Written() {
			c.Writer.Header().Del("Content-Type")
			c.Writer.Header().Del("Content-Disposition")
			return err
		}
		s.log.ErrorContext(c.Request.Context(), "console: export cut short", "file", filename, "rows_written", n, "err", err)
		panic(http.ErrAbortHandler)
	}
}

func (s *Server) listAccounts(c *gin.Context, se *Session) error {
	return items(c)(s.accounts(c.Request.Context()))
}

func (s *Server) createAccount(c *gin.Context, se *Session, b struct {
	Username string `json:"username"`
	Role     Role   `json:"role"`
}) error {
	return reply(c, http.StatusCreated)(s.svc.CreateAccount(c.Request.Context(), s.actor(c, se), b.Username, b.Role))
}

func (s *Server) setAccountDisabled(disabled bool) func(*gin.Context, *Session) error {
	return func(c *gin.Context, se *Session) error {
		id := c.Param("admin_id")
		err := s.svc.SetAccountDisabled(c.Request.Context(), s.actor(c, se), id, disabled)
		return answer(c, err, gin.H{"id": id, "disabled": disabled}, "/accounts", pick(disabled, "account_disabled", "account_enabled"))
	}
}

func (s *Server) setAccountRole(c *gin.Context, se *Session, b struct {
	Role Role `json:"role"`
}) error {
	id := c.Param("admin_id")
	err := s.svc.SetAccountRole(c.Request.Context(), s.actor(c, se), id, b.Role)
	return reply(c, http.StatusOK)(gin.H{"id": id, "role": b.Role}, err)
}

// resetPassword draws a one-time password, or sets the body's password when it has one.
func (s *Server) resetPassword(c *gin.Context, se *Session, b struct {
	Password string `json:"password"`
}) error {
	return reply(c, http.StatusOK)(s.svc.ResetPassword(c.Request.Context(), s.actor(c, se), c.Param("admin_id"), b.Password))
}

// createToken makes a token for the caller's account (how acv login trades a password for
// one). A request holding a token needs the admin role to make another, so a token cannot
// outlive itself by minting its successor.
func (s *Server) createToken(c *gin.Context, se *Session, b struct {
	Name      string `json:"name"`
	Role      Role   `json:"role"`
	ExpiresIn int64  `json:"expires_in"`
}) error {
	a := s.actor(c, se)
	if se.apiToken != nil {
		if err := a.require(RoleAdmin); err != nil {
			return err
		}
	}
	if b.ExpiresIn < 0 || b.ExpiresIn > int64(MaxTokenTTL/time.Second) {
		return contract.Errorf(contract.KindInvalid, "expires_in must be seconds from 60 to %d", int64(MaxTokenTTL/time.Second))
	}
	return reply(c, http.StatusCreated)(s.svc.CreateToken(c.Request.Context(), a, b.Name, b.Role, time.Duration(b.ExpiresIn)*time.Second))
}

func (s *Server) listTokens(c *gin.Context, se *Session) error {
	return items(c)(s.svc.Tokens(c.Request.Context(), s.actor(c, se)))
}

func (s *Server) revokeToken(c *gin.Context, se *Session) error {
	t, err := s.svc.RevokeToken(c.Request.Context(), s.actor(c, se), c.Param("token_id"))
	return answer(c, err, t, "/tokens", "token_revoked")
}
