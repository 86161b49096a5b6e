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
