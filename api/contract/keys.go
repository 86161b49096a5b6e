package contract

// NewAPIKey is a key to record. The caller (internal/admin) makes its id and secret and seals
// the secret: the store keeps Secret as given, an opaque string, and never sees it in clear.
// RatePerSec <= 0 or Burst <= 0 leaves that limit unset.
type NewAPIKey struct {
	ID, ProjectID string
	Secret        string
	RatePerSec    float64
	Burst         int
}

// KeyInfo is an API key as an operator lists it: never its secret.
type KeyInfo struct {
	ID         string  `json:"key_id"`
	ProjectID  string  `json:"project_id"`
	Revoked    bool    `json:"revoked"`
	RevokedAt  *int64  `json:"revoked_at"`
	RatePerSec float64 `json:"rate_per_sec"`
	Burst      int     `json:"burst"`
	CreatedAt  int64   `json:"created_at"`
	// LastUsedAt is when the key last authenticated a request, as the API processes flush it
	// (every few seconds, TouchAPIKeys); nil when never.
	LastUsedAt *int64 `json:"last_used_at"`
}

// StoredSecret is one API key's secret as the table holds it: sealed, or in clear for a key
// issued before secrets were sealed. The store does not tell them apart.
type StoredSecret struct {
	KeyID  string
	Secret string
}

// RewrapResult counts what re-sealing every API key's secret did with each API key's secret.
type RewrapResult struct {
	// Sealed: secrets kept in clear (keys issued before sealing), now sealed.
	Sealed int `json:"sealed"`
	// Rewrapped: secrets sealed by an older master key, now sealed by the active one.
	Rewrapped int `json:"rewrapped"`
	// Current: secrets already sealed by the active master key, which opened; left alone.
	Current int `json:"current"`
	// Failed: secrets that do not open (their master key is not configured, or they are not
	// authentic); left alone. RewrapKeys then returns an error.
	Failed int `json:"failed"`
}
