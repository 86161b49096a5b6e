package contract

import "fmt"

// CodeRecord is a code as both stores hold it: the resource's stored fields plus the
// millisecond verification time and the version of the last state change.
type CodeRecord struct {
	ID           string
	ProjectID    string
	Code         string
	Disabled     bool
	ExpiresAt    *int64 // unix seconds, the code's own expiry; nil = the project's applies
	VerifiedAtMs int64  // unix ms; 0 = unused
	VerifiedBy   string // "" = none
	CreatedAt    int64  // unix seconds
	Version      int64
}

// Resource renders the record as the code resource, deriving status and is_expired at now with
// the project's expiry as the fallback, so every endpoint derives state the same way.
func (r CodeRecord) Resource(projectExpiresAt *int64, now int64) Code {
	c := Code{ID: r.ID, Code: r.Code, IsDisabled: r.Disabled, ExpiresAt: r.ExpiresAt, CreatedAt: r.CreatedAt}
	if r.VerifiedAtMs > 0 {
		sec := r.VerifiedAtMs / 1000
		c.VerifiedAt = &sec
		if r.VerifiedBy != "" {
			by := r.VerifiedBy
			c.VerifiedBy = &by
		}
	}
	c.Fill(projectExpiresAt, now)
	return c
}

// WithLiveState returns r with the use and disable state of live, Redis's newer copy.
func (r CodeRecord) WithLiveState(live CodeRecord) CodeRecord {
	r.Disabled, r.VerifiedAtMs, r.VerifiedBy, r.Version = live.Disabled, live.VerifiedAtMs, live.VerifiedBy, live.Version
	return r
}

// ListQuery selects one page of a project's codes.
type ListQuery struct {
	Page     int    // 1-based; < 1 is treated as 1
	PageSize int    // < 1 is treated as DefaultPageSize
	State    State  // "" = any state
	Search   string // case-insensitive substring of the code value; "" = no search
}

// State is a code's derived state, the value of the list filter `status`.
type State string

// The four disjoint states of a code.
const (
	StateUnused   State = "unused"
	StateUsed     State = "used"
	StateDisabled State = "disabled"
	StateExpired  State = "expired"
)

// ParseState accepts exactly the four state names.
func ParseState(s string) (State, error) {
	switch State(s) {
	case StateUnused, StateUsed, StateDisabled, StateExpired:
		return State(s), nil
	}
	return "", fmt.Errorf("unknown status %q: use unused, used, disabled or expired", s)
}

// EffectiveExpiry is the code's own expiry, or its project's when the code has none.
func EffectiveExpiry(codeExpiresAt, projectExpiresAt *int64) *int64 {
	if codeExpiresAt != nil {
		return codeExpiresAt
	}
	return projectExpiresAt
}

// Expired tells whether an expiry (unix seconds) has passed: now >= expiry.
func Expired(expiry *int64, nowUnix int64) bool {
	return expiry != nil && nowUnix >= *expiry
}

// DeriveState applies the contract's precedence: disabled > used > expired > unused.
func DeriveState(disabled, used bool, effectiveExpiry *int64, nowUnix int64) State {
	switch {
	case disabled:
		return StateDisabled
	case used:
		return StateUsed
	case Expired(effectiveExpiry, nowUnix):
		return StateExpired
	}
	return StateUnused
}

// Fill sets Status and IsExpired from the derived state, so a disabled code once verified
// shows status false.
func (c *Code) Fill(projectExpiresAt *int64, nowUnix int64) {
	st := DeriveState(c.IsDisabled, c.VerifiedAt != nil, EffectiveExpiry(c.ExpiresAt, projectExpiresAt), nowUnix)
	c.Status = st == StateUsed
	c.IsExpired = st == StateExpired
}
