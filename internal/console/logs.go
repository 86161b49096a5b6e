package console

import (
	"cmp"
	"context"
	"errors"
	"io"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/safecsv"
)

// DefaultLogWindow is a log search's range when it names none (one or two day partitions);
// MaxLogWindow bounds it: any kept logs, never "all time" by accident.
const (
	DefaultLogWindow = 24 * time.Hour
	MaxLogWindow     = 400 * 24 * time.Hour
)

// LogPage is one page of a search, with the range it covered and the cursor of the next page.
type LogPage struct {
	Items     []contract.LogRecord
	From, To  time.Time
	NextAfter string
}

// logFilter turns a search as an operator writes it (a code by value, result "failure", no
// range: the last DefaultLogWindow) into the store's filter: the range defaulted and checked, the
// code's value resolved to its id (a value no code has searches the attempts on it), and the
// whole checked as the store would check it, so an export refuses it before its first byte.
func (s *Service) logFilter(ctx context.Context, f contract.LogFilter) (contract.LogFilter, error) {
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
	switch f.Result {
	case "", contract.ResultSuccess, contract.ResultReactivated, contract.ResultFailed:
	case "failure":
		f.Result = contract.ResultFailed
	default:
		return f, contract.Errorf(contract.KindInvalid, "result must be success, failure or reactivated")
	}
	switch f.Action {
	case "", string(contract.ActionVerify), string(contract.ActionReactivate):
	default:
		return f, contract.Errorf(contract.KindInvalid, "action must be verify or reactivate")
	}
	if f.ProjectID != "" && !contract.ValidID(f.ProjectID) {
		return f, contract.Errorf(contract.KindInvalid, "project_id must be an id of 32 hex digits")
	}
	if f.Code != "" {
		if f.ProjectID == "" {
			return f, contract.Errorf(contract.KindInvalid, "A search by code needs its project (project_id)")
		}
		rec, err := s.store.CodeByValue(ctx, f.ProjectID, f.Code)
		switch {
		case errors.Is(err, contract.ErrNotFound):
			// No such code: the attempts on that value (logged with the value, no code id).
		case err != nil:
			return f, err
		default:
			f.Code, f.CodeID = "", rec.ID
		}
	}
	return f, s.store.CheckLogFilter(f)
}

// SearchLogs reads one page of verification logs, newest first.
func (s *Service) SearchLogs(ctx context.Context, q contract.LogFilter) (LogPage, error) {
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

// withSet is detail with the values of fs that are set: an export's record names its filters.
func withSet[V comparable](detail map[string]any, fs map[string]V) map[string]any {
	var zero V
	for k, v := range fs {
		if v != zero {
			detail[k] = v
		}
	}
	return detail
}

// ExportLogs checks an export of the logs matching q and records it with
// its filters; the function returned then writes them as spreadsheet-safe CSV and returns how
// many rows it wrote. A refusal comes before the first byte.
func (s *Service) ExportLogs(ctx context.Context, a Actor, q contract.LogFilter) (func(io.Writer) (int, error), error) {
	f, err := s.logFilter(ctx, q)
	if err != nil {
		return nil, err
	}
	detail := withSet(map[string]any{"format": "csv", "from": f.From.Unix(), "to": f.To.Unix()}, map[string]string{
		"code": q.Code, "action": q.Action, "result": q.Result, "reason": q.Reason, "verified_by": q.VerifiedBy, "ip": q.IP})
	if err := s.record(ctx, a, "logs.export", "project", q.ProjectID, q.ProjectID, detail); err != nil {
		return nil, err
	}
	return func(w io.Writer) (int, error) {
		columns := []string{"verified_at", "id", "project_id", "code_id", "code", "action", "result", "reason", "verified_by", "ip_address"}
		return writeCSV(w, columns, func(row func(...string) error) error {
			return s.store.ExportLogs(ctx, f, func(r contract.LogRecord) error {
				return row(r.VerifiedAt.UTC().Format(time.RFC3339Nano), r.ID, r.ProjectID, r.CodeID, r.Code,
					r.Action, r.Result, r.Reason, r.VerifiedBy, r.IP)
			})
		})
	}, nil
}

// writeCSV writes columns and the rows emitted as spreadsheet-safe CSV, counting the rows.
func writeCSV(w io.Writer, columns []string, rows func(row func(...string) error) error) (int, error) {
	out := safecsv.NewWriter(w)
	if err := out.Write(columns...); err != nil {
		return 0, err
	}
	n := 0
	err := rows(func(cells ...string) error {
		n++
		return out.Write(cells...)
	})
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	return n, err
}

// MaintainLogs runs one partition maintenance now, recording a run that did something.
func (s *Service) MaintainLogs(ctx context.Context, a Actor, retentionDays, ahead *int) (contract.LogMaintenance, error) {
	p := cmp.Or(s.cfg.LogPolicy, contract.DefaultLogPolicy())
	if retentionDays != nil {
		p.RetentionDays = *retentionDays
	}
	if ahead != nil {
		p.Ahead = *ahead
	}
	res, err := s.store.MaintainLogPartitions(ctx, s.now(), p)
	if err != nil || res.Busy {
		return res, err
	}
	return res, s.record(ctx, a, "logs.maintain", "log_partitions", "", "", map[string]any{
		"retention_days": p.RetentionDays, "ahead": p.Ahead, "created": res.Created, "dropped": res.Dropped,
		"moved": res.Moved, "purged": res.Purged,
	})
}

// PipelineHealth is the state of the log pipeline as the dashboard shows it: the events waiting
// in Redis's outboxes (Known without Config.Outbox false), the relays alive, and how old the
// newest log in PostgreSQL is (HasLog false when the last day has none). Problem says why a
// part could not be read.
type PipelineHealth struct {
	Known        bool
	Backlog      int64
	OldestAge    time.Duration
	Relays       int64
	RelaysKnown  bool
	NewestLogAge time.Duration
	HasLog       bool
	Problem      string
}

// OutboxReader reads the outboxes' backlog (audit.OutboxLen).
type OutboxReader func(ctx context.Context) (length int64, oldestAge time.Duration, err error)

// RelayCounter counts the relays alive (audit.LiveRelays over the process's Redis).
type RelayCounter func(ctx context.Context) (int64, error)

// Health reads the pipeline's health; a part not read is told in Problem.
func (s *Service) Health(ctx context.Context) PipelineHealth {
	now := s.now()
	var h PipelineHealth
	if s.cfg.Outbox != nil {
		if n, age, err := s.cfg.Outbox(ctx); err != nil {
			s.log.WarnContext(ctx, "dashboard: read outbox backlog", "err", err)
			h.Problem = "The outbox backlog could not be read from Redis."
		} else {
			h.Known, h.Backlog, h.OldestAge = true, n, age
		}
	}
	if s.cfg.Relays != nil {
		if n, err := s.cfg.Relays(ctx); err != nil {
			s.log.WarnContext(ctx, "dashboard: count live relays", "err", err)
			h.Problem += " The relays' heartbeats could not be read from Redis."
		} else {
			h.Relays, h.RelaysKnown = n, true
		}
	}
	if t, ok, err := s.store.NewestLog(ctx, now); err != nil {
		s.log.WarnContext(ctx, "dashboard: read newest log", "err", err)
		h.Problem += " The newest log could not be read from PostgreSQL."
	} else if ok {
		h.HasLog, h.NewestLogAge = true, max(now.Sub(t), 0)
	}
	return h
}
