package contract

import "time"

// AdminToken is an admin API token as the store holds it: never its secret, only the secret's
// hash. Admin is the owner's account, read with the token so that a disabled owner or a lower
// role applies to the token's next request.
type AdminToken struct {
	ID         string
	Hash       []byte
	Name       string
	Role       string
	Admin      AdminAccount
	CreatedAt  time.Time
	ExpiresAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// NewAdminToken is what creating a token records.
type NewAdminToken struct {
	Hash      []byte // SHA-256 of the secret
	Name      string
	AdminID   string
	Role      string
	Now       time.Time
	ExpiresAt time.Time
}

// APIToken is an admin API token as the admin API shows it: never its secret.
type APIToken struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Role       string `json:"role"`
	OwnerID    string `json:"owner_id"`
	Owner      string `json:"owner"`
	CreatedAt  int64  `json:"created_at"`
	ExpiresAt  int64  `json:"expires_at"`
	LastUsedAt *int64 `json:"last_used_at"`
	RevokedAt  *int64 `json:"revoked_at"`
}

// NewAPIToken is a token just made, with its secret, shown this once.
type NewAPIToken struct {
	APIToken
	Secret string `json:"secret"`
}
