package console

import (
	"context"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/safecsv"
)

// DefaultLogWindow is the time range a log search covers when it names none: the last day.
// The logs are partitioned by day, and a bounded range keeps a search to one or two partitions.
const DefaultLogWindow = 24 * time.Hour

// MaxLogWindow bounds the range of one search or export: the retention's default, so any
// range of kept logs can be read, but never "all time" by accident of an empty field.
const MaxLogWindow = 400 * 24 * time.Hour

// LogSearch is a verification-log search as an operator writes it: a code by its value (in
// ProjectID), result "failure" for every failed attempt, and an optional time range.
type LogSearch struct {
	ProjectID  string
	Code       string // a code value; needs ProjectID
	Action     string
	Result     string // success, failure (or failed), reactivated
	Reason     string
	VerifiedBy string
	IP         string
	From, To   time.Time // zero: the last DefaultLogWindow
	After      string
	Limit      int
}

// LogPage is one page of a search, with the range it covered and the cursor of the next page.
type LogPage struct {
	Items     []contract.LogRecord
	From, To  time.Time
	NextAfter string
}

// logFilter turns a search into the store's filter: the range defaulted and checked, the code's
// value resolved to its id (a value no code has searches the attempts on it), and the whole
// checked as the store would check it, so an export refuses it before its first byte.
func (s *Service) logFilter(ctx context.Context, q LogSearch) (contract.LogFilter, error) {
	f := contract.LogFilter{ProjectID: q.ProjectID, Action: q.Action, Reason: q.Reason, VerifiedBy: q.VerifiedBy,
		IP: q.IP, After: q.After, Limit: q.Limit, From: q.From, To: q.To}
	if f.To.IsZero() {
		// A second ahead, so a log written in the current second is in range.
		f.To = s.now().Add(time.Second).Truncate(time.Second)
	}
	if f.From.IsZero() {
		f.From = f.To.Add(-DefaultLogWindow)
	}
	if !f.From.Before(f.To) {
		return f, contract.Errorf(contract.KindInvalid, "from must be before to")
	}
	if f.To.Sub(f.From) > MaxLogWindow {
		return f, contract.Errorf(contract.KindInvalid, "The time range may span at most %d days", int(MaxLogWindow/(24*time.Hour)))
	}
	switch q.Result {
	case "", contract.ResultSuccess, contract.ResultReactivated, contract.ResultFailed:
		f.Result = q.Result
	case "failure":
		f.Result = contract.ResultFailed
	default:
		return f, contract.Errorf(contract.KindInvalid, "result must be success, failure or reactivated")
	}
	switch q.Action {
	case "", string(contract.ActionVerify), string(contract.ActionReactivate):
	default:
		return f, contract.Errorf(contract.KindInvalid, "action must be verify or reactivate")
	}
	if f.ProjectID != "" && !contract.ValidID(f.ProjectID) {
		return f, contract.Errorf(contract.KindInvalid, "project_id must be an id of 32 hex digits")
	}
	if q.Code != "" {
		if q.ProjectID == "" {
			return f, contract.Errorf(contract.KindInvalid, "A search by code needs its project (project_id)")
		}
		rec, err := s.store.CodeByValue(ctx, q.ProjectID, q.Code)
		switch {
		case errors.Is(err, contract.ErrNotFound):
			// No such code: the attempts on that value (logged with the value, no code id).
			f.Code = q.Code
		case err != nil:
			return f, err
		default:
			f.CodeID = rec.ID
		}
	}
	return f, s.store.CheckLogFilter(f)
}

// SearchLogs reads one page of verification logs, newest first (viewer and above).
func (s *Service) SearchLogs(ctx context.Context, a Actor, q LogSearch) (LogPage, error) {
	if err := a.require(RoleViewer); err != nil {
		return LogPage{}, err
	}
	f, err := s.logFilter(ctx, q)
	if err != nil {
		return LogPage{}, err
	}
	page := LogPage{Items: []contract.LogRecord{}, From: f.From, To: f.To}
	if f.Limit < 1 || f.Limit > 1000 {
		f.Limit = 100
	}
	rows, err := s.store.SearchLogs(ctx, f)
	if err != nil {
		return LogPage{}, err
	}
	page.Items = rows
	if len(rows) == f.Limit {
		page.NextAfter = rows[len(rows)-1].Cursor()
	}
	return page, nil
}

// logColumns are the columns of a logs export, in order.
var logColumns = []string{"verified_at", "id", "project_id", "code_id", "code", "action", "result", "reason", "verified_by", "ip_address"}

// ExportLogsReady checks what ExportLogs checks before it writes anything, so an HTTP
// handler can answer an error status instead of a truncated file.
func (s *Service) ExportLogsReady(ctx context.Context, a Actor, q LogSearch) error {
	if err := a.require(RoleOperator); err != nil {
		return err
	}
	_, err := s.logFilter(ctx, q)
	return err
}

// ExportLogs writes every log matching q as CSV (operator and above), in the spreadsheet-safe
// format of every export (safecsv), and records the export, with its filters, in the admin
// audit log. It returns how many rows it wrote.
func (s *Service) ExportLogs(ctx context.Context, a Actor, q LogSearch, w io.Writer) (int, error) {
	if err := a.require(RoleOperator); err != nil {
		return 0, err
	}
	f, err := s.logFilter(ctx, q)
	if err != nil {
		return 0, err
	}
	detail := map[string]any{"format": "csv", "from": f.From.Unix(), "to": f.To.Unix()}
	for k, v := range map[string]string{"code": q.Code, "action": q.Action, "result": q.Result, "reason": q.Reason,
		"verified_by": q.VerifiedBy, "ip": q.IP} {
		if v != "" {
			detail[k] = v
		}
	}
	if err := s.record(ctx, a, "logs.export", "project", q.ProjectID, q.ProjectID, detail); err != nil {
		return 0, err
	}
	out := safecsv.NewWriter(w)
	if err := out.Write(logColumns...); err != nil {
		return 0, err
	}
	n := 0
	err = s.store.ExportLogs(ctx, f, func(r contract.LogRecord) error {
		n++
		return out.Write(r.VerifiedAt.UTC().Format(time.RFC3339Nano), r.ID, r.ProjectID, r.CodeID, r.Code,
			r.Action, r.Result, r.Reason, r.VerifiedBy, r.IP)
	})
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	return n, err
}

// auditColumns are the columns of an audit export, in order.
var auditColumns = []string{"seq", "at", "admin_id", "admin_username", "client_ip", "action", "target_kind", "target_id",
	"project_id", "detail", "prev_hash", "hash"}

// auditExportPage is how many audit rows an export reads from the store at a time.
const auditExportPage = 1000

// ExportAudit writes the admin audit rows matching f as CSV, newest first (operator and
// above), in the spreadsheet-safe format of every export (safecsv), and records the export
// itself, with its filters, in the audit log first: the row of the export is the newest in it,
// so a reader of the file sees who took it.
func (s *Service) ExportAudit(ctx context.Context, a Actor, f contract.AuditFilter, w io.Writer) (int, error) {
	if err := a.require(RoleOperator); err != nil {
		return 0, err
	}
	detail := map[string]any{"format": "csv"}
	for k, v := range map[string]string{"admin": f.AdminUsername, "action": f.Action, "target_kind": f.TargetKind,
		"target_id": f.TargetID, "project_id": f.ProjectID} {
		if v != "" {
			detail[k] = v
		}
	}
	if !f.Since.IsZero() {
		detail["since"] = f.Since.Unix()
	}
	if !f.Until.IsZero() {
		detail["until"] = f.Until.Unix()
	}
	if err := s.record(ctx, a, "audit.export", "", "", f.ProjectID, detail); err != nil {
		return 0, err
	}
	out := safecsv.NewWriter(w)
	if err := out.Write(auditColumns...); err != nil {
		return 0, err
	}
	n := 0
	f.Limit, f.BeforeSeq = auditExportPage, 0
	for {
		rows, err := s.store.AdminAudit(ctx, f)
		if err != nil {
			return n, err
		}
		for _, r := range rows {
			n++
			if err := out.Write(strconv.FormatInt(r.Seq, 10), r.At.UTC().Format(time.RFC3339Nano), r.AdminID,
				r.AdminUsername, r.ClientIP, r.Action, r.TargetKind, r.TargetID, r.ProjectID, string(r.Detail),
				hexOf(r.PrevHash), hexOf(r.Hash)); err != nil {
				return n, err
			}
		}
		if len(rows) < f.Limit {
			break
		}
		f.BeforeSeq = rows[len(rows)-1].Seq
	}
	return n, out.Flush()
}
