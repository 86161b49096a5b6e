package contract

// APIKey is an API key with what authentication needs from its project, so one read decides
// whether a request may proceed.
type APIKey struct {
	ID        string
	ProjectID string
	// Secret is the HMAC key clients sign with, 64 hex characters, wherever the HTTP layer
	// (or a client) sees an APIKey: verifying a signature needs it in clear. At rest it is
	// sealed (internal/secrets, "v1:<kid>:…"): the stores keep and return the sealed string
	// opaquely, and the wiring opens it before the HTTP layer gets the key.
	Secret  string
	Revoked bool
	// RatePerSec and Burst configure the key's token bucket; both 0 means unlimited.
	RatePerSec       float64
	Burst            int
	ProjectEnabled   bool
	ProjectExpiresAt *int64 // unix seconds
	// Version increases with every change of the key (rate limit, revocation), so a mirror
	// of it keeps the newest state whatever order writes arrive in.
	Version int64
}

// Limit is the key's token bucket; the zero RateLimit (unlimited) when either part is unset.
func (k APIKey) Limit() RateLimit {
	if k.RatePerSec <= 0 || k.Burst <= 0 {
		return RateLimit{}
	}
	return RateLimit{Rate: k.RatePerSec, Burst: k.Burst}
}

// CodeRecord is a code as the stores hold it: the resource's stored fields plus what the hot
// path needs, the millisecond verification time and the version of the last state change.
// Postgres and Redis both speak it, so a code loaded from one into the other is copied, not
// translated.
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
	c := Code{
		ID:         r.ID,
		Code:       r.Code,
		IsDisabled: r.Disabled,
		ExpiresAt:  r.ExpiresAt,
		CreatedAt:  r.CreatedAt,
	}
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

// WithLiveState returns r with the use and disable state of live, a newer copy of the same code
// (Redis's), keeping r's other fields.
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
