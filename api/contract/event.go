package contract

// Event is one verification-log record on its way from the Redis outbox through Kafka to
// Postgres. It also carries the code's state snapshot after the operation, so the consumer can
// bring the code's Postgres row up to date in version order.
type Event struct {
	ID     string `json:"id"`
	CodeID string `json:"code_id"` // "" for an attempt on a value no code has (Code)
	// Code is the value an attempt named when no code of the project has it (CodeID ""): such
	// attempts are logged too, so operators see what was tried (CODE_NOT_FOUND).
	Code       string `json:"code,omitempty"`
	ProjectID  string `json:"project_id"`
	Action     Action `json:"action"`
	Result     string `json:"result"`
	Reason     string `json:"reason,omitempty"`
	VerifiedBy string `json:"verified_by,omitempty"`
	IP         string `json:"ip"`
	TS         int64  `json:"ts"` // unix ms of the operation
	Version    int64  `json:"version"`
	Changed    bool   `json:"state_changed"`
	VerifiedAt int64  `json:"verified_at,omitempty"` // unix ms, 0 = unused
	StateBy    string `json:"state_verified_by,omitempty"`
	Disabled   bool   `json:"disabled,omitempty"`
}

// Unknown tells whether e is an attempt on a value no code of the project has: it carries the
// value (Code) instead of a code id.
func (e *Event) Unknown() bool { return e.CodeID == "" && e.Code != "" }

// WellFormedIDs tells whether e's event, project and code ids are 32 lowercase hex digits, as
// the log's uuid columns take them (an attempt on an unknown value has no code id). The sink
// refuses an event without them, and the log writer skips one rather than offer it.
func (e *Event) WellFormedIDs() bool {
	return ValidID(e.ID) && ValidID(e.ProjectID) && (e.Unknown() || ValidID(e.CodeID))
}
