package contract

import "time"

// AdminAccount is an operator console account as the store holds it. PasswordHash is the
// argon2id PHC string; it never leaves the console package's login and change-password code.
type AdminAccount struct {
	ID                 string
	Username           string
	PasswordHash       string
	Role               string
	MustChangePassword bool
	Disabled           bool
	CreatedAt          time.Time
	PasswordChangedAt  time.Time
}

// NewAdminAccount is what creating an account supplies; the id and times are the store's.
type NewAdminAccount struct {
	Username           string
	PasswordHash       string
	Role               string
	MustChangePassword bool
	Now                time.Time // created_at and password_changed_at
}

// AdminSession is an operator console session with the account that holds it, as one lookup
// returns them: every request reads the account's role, state and password time afresh.
type AdminSession struct {
	// ID is the SHA-256 of the session token (the token is never stored).
	ID         []byte
	Admin      AdminAccount
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time
	RevokedAt  *time.Time
	UserAgent  string
	ClientIP   string
}

// NewAdminSession is what a login records.
type NewAdminSession struct {
	ID        []byte // SHA-256 of the token
	AdminID   string
	Now       time.Time
	ExpiresAt time.Time
	UserAgent string
	ClientIP  string
}

// LoginLimit is one subject an attempt is counted against and how its count locks it.
type LoginLimit struct {
	Subject string
	// LockFor is how long the subject is locked once it has failures attempts within the
	// window (this one included), from the attempt on; 0 for no lock.
	LockFor func(failures int) time.Duration
}

// LoginReservation is an attempt the login throttle counted: what a refund gives back. The
// caller holds it and hands it back unchanged.
type LoginReservation struct {
	Subjects []string
	// Set is the lock this attempt set on each subject, nil where it set none; Prev the lock
	// it replaced.
	Set, Prev []*time.Time
}
