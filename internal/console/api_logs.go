package console

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/acv/acv/api/contract"
)

// logSearchQuery reads a log search from the query string, as the API and the logs page
// take it: project_id, code, action, result, reason, verified_by, ip, from, to, after, limit.
func logSearchQuery(c *gin.Context) (LogSearch, error) {
	q := LogSearch{ProjectID: c.Query("project_id"), Code: c.Query("code"), Action: c.Query("action"),
		Result: c.Query("result"), Reason: c.Query("reason"), VerifiedBy: c.Query("verified_by"), IP: c.Query("ip"),
		After: c.Query("after")}
	var err error
	if q.From, err = queryTime(c, "from"); err != nil {
		return q, err
	}
	if q.To, err = queryTime(c, "to"); err != nil {
		return q, err
	}
	if q.Limit, err = queryInt(c, "limit", 100); err != nil {
		return q, err
	}
	if q.Limit < 1 || q.Limit > 1000 {
		return q, contract.Errorf(contract.KindInvalid, "limit must be 1 to 1000")
	}
	return q, nil
}

// logItem is a log as the API shows it: the time in Unix seconds and RFC 3339.
type logItem struct {
	contract.LogRecord
	VerifiedAt     int64  `json:"verified_at"`
	VerifiedAtText string `json:"verified_at_rfc3339"`
}

func (s *Server) listLogs(c *gin.Context, se *Session) error {
	q, err := logSearchQuery(c)
	if err != nil {
		return err
	}
	page, err := s.svc.SearchLogs(c.Request.Context(), s.actor(c, se), q)
	if err != nil {
		return err
	}
	items := make([]logItem, 0, len(page.Items))
	for _, r := range page.Items {
		items = append(items, logItem{LogRecord: r, VerifiedAt: r.VerifiedAt.Unix(),
			VerifiedAtText: r.VerifiedAt.UTC().Format(time.RFC3339Nano)})
	}
	body := gin.H{"items": items, "from": page.From.Unix(), "to": page.To.Unix()}
	if page.NextAfter != "" {
		body["next_after"] = page.NextAfter
	}
	c.JSON(http.StatusOK, body)
	return nil
}

// exportLogs streams every log matching the query as CSV; the export is in the audit log.
func (s *Server) exportLogs(c *gin.Context, se *Session) error {
	ctx, a := c.Request.Context(), s.actor(c, se)
	q, err := logSearchQuery(c)
	if err != nil {
		return err
	}
	if err := s.svc.ExportLogsReady(ctx, a, q); err != nil {
		return err
	}
	return s.streamCSV(c, "verification-logs.csv", func() (int, error) { return s.svc.ExportLogs(ctx, a, q, c.Writer) })
}

// exportAudit streams the admin audit rows matching the query as CSV; the export is itself
// recorded in the audit log.
func (s *Server) exportAudit(c *gin.Context, se *Session) error {
	ctx, a := c.Request.Context(), s.actor(c, se)
	f, err := auditFilterQuery(c)
	if err != nil {
		return err
	}
	if err := a.require(RoleOperator); err != nil {
		return err
	}
	return s.streamCSV(c, "admin-audit.csv", func() (int, error) { return s.svc.ExportAudit(ctx, a, f, c.Writer) })
}

// streamCSV answers a CSV download written by write. An error before the first byte is an
// error status; one after it cuts the connection, so a client never takes a truncated file for
// a whole one.
func (s *Server) streamCSV(c *gin.Context, filename string, write func() (int, error)) error {
	c.Header("Content-Type", "text/csv; charset=utf-8")
	c.Header("Content-Disposition", `attachment; filename="`+filename+`"`)
	c.Status(http.StatusOK)
	n, err := write()
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
