package contract

import (
	"strconv"
	"time"
)

// The default log policy: days after today partitioned in advance (maintenance stopped for
// less leaves no day without one) and days of logs kept (ACV_LOG_RETENTION).
const (
	DefaultLogPartitionsAhead = 7
	DefaultLogRetentionDays   = 400
)

// DefaultLogPolicy is the policy of the service unless configured otherwise.
func DefaultLogPolicy() LogPolicy {
	return LogPolicy{Ahead: DefaultLogPartitionsAhead, RetentionDays: DefaultLogRetentionDays}
}

// LogFilter selects verification logs for the console's search. From and To are required: the
// logs are partitioned by day, and a bounded range keeps a search to the partitions it covers.
// Empty fields do not filter.
type LogFilter struct {
	From, To   time.Time // verified_at >= From, verified_at < To
	ProjectID  string
	CodeID     string
	Code       string // a value no code has: the attempts on it
	Action     string // verify or reactivate
	Result     string // success, failed or reactivated
	Reason     string // an error code or a reactivation's reason
	VerifiedBy string
	IP         string
	After      string // only rows older than this Cursor
	Limit      int    // a page's size (1..1000, 100 when 0); not used by ExportLogs
}

// LogRecord is one verification log as the console shows it, with the code's value (or the
// value an attempt named when no code had it, CodeID "").
type LogRecord struct {
	ID         string    `json:"id"`
	VerifiedAt time.Time `json:"-"`
	ProjectID  string    `json:"project_id"`
	CodeID     string    `json:"code_id"`
	Code       string    `json:"code"`
	Action     string    `json:"action"`
	Result     string    `json:"result"`
	Reason     string    `json:"reason"`
	VerifiedBy string    `json:"verified_by"`
	IP         string    `json:"ip_address"`
}

// LogPolicy says which partitions a maintenance run keeps.
type LogPolicy struct {
	Ahead         int // days after today partitioned in advance (negative: none)
	RetentionDays int // a day's partition is dropped once all older than that; 0 keeps all
}

// LogPartition is one partition of verification_logs and its range [From, To); the default
// partition has zero times.
type LogPartition struct {
	Name     string
	From, To time.Time
	Default  bool
}

// LogMaintenance is what one run did.
type LogMaintenance struct {
	Busy             bool // another process held the lock: this run did nothing
	Created, Dropped []string
	// Moved counts rows taken out of the default partition into day partitions; Purged those
	// deleted from it for being older than the retention.
	Moved, Purged int64
}

// Cursor is the keyset position of r: its time in microseconds and its id.
func (r LogRecord) Cursor() string {
	return strconv.FormatInt(r.VerifiedAt.UnixMicro(), 10) + "_" + r.ID
}

// HourOutcomes counts the verifies of the hour From that succeeded and that were refused.
type HourOutcomes struct {
	From    time.Time
	Success int64
	Refused int64
}
