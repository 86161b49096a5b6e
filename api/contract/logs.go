package contract

import (
	"strconv"
	"time"
)

const (
	// DefaultLogPartitionsAhead is how many days after today get their partition in advance: a
	// maintenance run that stops for less than that leaves no day without one.
	DefaultLogPartitionsAhead = 7
	// DefaultLogRetentionDays is how many days of logs the retention keeps (ACV_LOG_RETENTION).
	DefaultLogRetentionDays = 400
)

// DefaultLogPolicy is the policy of the service unless configured otherwise.
func DefaultLogPolicy() LogPolicy {
	return LogPolicy{Ahead: DefaultLogPartitionsAhead, RetentionDays: DefaultLogRetentionDays}
}

// LogFilter selects verification logs for the console's search. From and To are required:
// verification_logs is partitioned by day of verified_at, and a bounded range is what keeps a
// search to the partitions it covers instead of every day kept. Empty fields do not filter.
type LogFilter struct {
	From, To  time.Time // verified_at >= From, verified_at < To
	ProjectID string
	CodeID    string
	// Code is a value no code has: the attempts on it (rows without a code id).
	Code       string
	Action     string // verify or reactivate
	Result     string // success, failed or reactivated
	Reason     string // an error code (CODE_ALREADY_USED) or a reactivation's reason
	VerifiedBy string
	IP         string
	// After pages: only rows older than this cursor (LogCursor of the last row shown).
	After string
	// Limit bounds a page (1..1000, 100 when 0); SearchLogs ignores it in ExportLogs.
	Limit int
}

// LogRecord is one verification log as the console shows it, with the code's value when the
// code still exists, or the value an attempt named when no code had it (CodeID "").
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
	// Ahead is how many days after today's get a partition (negative: none; today's always does).
	Ahead int
	// RetentionDays drops a day's partition once all of it is older than that many days; 0
	// keeps every day.
	RetentionDays int
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
	// Busy is true when another process held the maintenance lock: this run did nothing.
	Busy bool
	// Created and Dropped name the partitions made and removed.
	Created, Dropped []string
	// Moved counts the rows taken out of the default partition into new day partitions; Purged
	// those deleted from it because they were older than the retention.
	Moved, Purged int64
}

// Cursor is the keyset position of r: its time in microseconds and its id.
func (r LogRecord) Cursor() string {
	return strconv.FormatInt(r.VerifiedAt.UnixMicro(), 10) + "_" + r.ID
}

// HourOutcomes is how many verifies started in the hour From succeeded and how many were
// refused (any error code, an unknown code too).
type HourOutcomes struct {
	From    time.Time
	Success int64
	Refused int64
}
