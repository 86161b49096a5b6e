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
