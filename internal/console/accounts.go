package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/acv/acv/api/contract"
	"golang.org/x/crypto/argon2"
)

// Account is a console account as the API shows it: never its password hash.
type Account struct {
	ID                 string `json:"id"`
	Username           string `json:"username"`
	Role               Role   `json:"role"`
	MustChangePassword bool   `json:"must_change_password"`
	Disabled           bool   `json:"disabled"`
	CreatedAt          int64  `json:"created_at"`
	PasswordChangedAt  int64  `json:"password_changed_at"`
}

func accountOf(a contract.AdminAccount) Account {
	return Account{ID: a.ID, Username: a.Username, Role: Role(a.Role), MustChangePassword: a.MustChangePassword,
		Disabled: a.Disabled, CreatedAt: a.CreatedAt.Unix(), PasswordChangedAt: a.PasswordChangedAt.Unix()}
}

// usernamePattern is the schema's check on admins.username, after lowercasing.
var usernamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._@-]{0,63}$`)

// normalizeUsername lowercases a username (logins are case-insensitive) and checks it.
func normalizeUsername(u string) (string, error) {
	u = strings.ToLower(strings.TrimSpace(u))
	if !usernamePattern.MatchString(u) {
		return "", contract.Errorf(contract.KindInvalid,
			"Username must be 1 to 64 characters: letters, digits, '.', '_', '@' or '-', starting with a letter or digit")
	}
	return u, nil
}

// NewAccount is a created account with its one-time password, shown once.
type NewAccount struct {
	Account
	OneTimePassword string `json:"one_time_password"`
}

// CreateAccount creates an account with a one-time password, returned once; the
// account must change it at its first login before anything else.
func (s *Service) CreateAccount(ctx context.Context, a Actor, username string, role Role) (NewAccount, error) {
	name, err := normalizeUsername(username)
	if err != nil {
		return NewAccount{}, err
	}
	if _, err := ParseRole(string(role)); err != nil {
		return NewAccount{}, invalid(err)
	}
	pw, hash, err := s.oneTimePassword()
	if err != nil {
		return NewAccount{}, err
	}
	acc, err := s.store.CreateAdminAccount(ctx, contract.NewAdminAccount{
		Username: name, PasswordHash: hash, Role: string(role), MustChangePassword: true, Now: s.now(),
	})
	if errors.Is(err, contract.ErrConflict) {
		return NewAccount{}, contract.Errorf(contract.KindConflict, "An account named %q already exists", name)
	}
	if err != nil {
		return NewAccount{}, err
	}
	if err := s.record(ctx, a, "account.create", "admin", acc.ID, "", map[string]any{"username": name, "role": string(role)}); err != nil {
		return NewAccount{}, err
	}
	return NewAccount{Account: accountOf(acc), OneTimePassword: pw}, nil
}

func (s *Server) accounts(ctx context.Context) ([]Account, error) {
	rows, err := s.st.AdminAccounts(ctx)
	return convert(rows, accountOf), err
}

// otherAccount reads the account an admin changes, never their own (the last admin could lock
// everyone out).
func (s *Service) otherAccount(ctx context.Context, a Actor, id string) (contract.AdminAccount, error) {
	if a.AdminID != "" && a.AdminID == id {
		return contract.AdminAccount{}, contract.Errorf(contract.KindConflict, "You cannot change your own account's role or state; ask another admin")
	}
	return s.account(ctx, id)
}

func (s *Service) account(ctx context.Context, id string) (contract.AdminAccount, error) {
	acc, err := s.store.AdminAccount(ctx, id)
	if errors.Is(err, contract.ErrNotFound) {
		return acc, contract.Errorf(contract.KindNotFound, "Account %s not found", id)
	}
	return acc, err
}

// SetAccountDisabled disables (ending its sessions) or enables an account.
func (s *Service) SetAccountDisabled(ctx context.Context, a Actor, id string, disabled bool) error {
	acc, err := s.otherAccount(ctx, a, id)
	if err != nil {
		return err
	}
	if err := s.store.SetAdminDisabled(ctx, id, disabled, s.now()); err != nil {
		return err
	}
	return s.record(ctx, a, pick(disabled, "account.disable", "account.enable"), "admin", id, "", map[string]any{"username": acc.Username})
}

// SetAccountRole changes an account's role, from its next request on.
func (s *Service) SetAccountRole(ctx context.Context, a Actor, id string, role Role) error {
	if _, err := ParseRole(string(role)); err != nil {
		return invalid(err)
	}
	acc, err := s.otherAccount(ctx, a, id)
	if err != nil {
		return err
	}
	if err := s.store.SetAdminRole(ctx, id, string(role)); err != nil {
		return err
	}
	return s.record(ctx, a, "account.role", "admin", id, "", map[string]any{
		"username": acc.Username, "from": acc.Role, "to": string(role)})
}

// ResetPassword gives an account a new one-time password, drawn when password is
// "", returned once: its sessions end, and its next login must change it first.
func (s *Service) ResetPassword(ctx context.Context, a Actor, id, password string) (NewAccount, error) {
	acc, err := s.otherAccount(ctx, a, id)
	if err != nil {
		return NewAccount{}, err
	}
	var pw, hash string
	if password == "" {
		pw, hash, err = s.oneTimePassword()
	} else if err = checkNewPassword(password, acc.Username); err != nil {
		err = invalid(err)
	} else {
		pw = password
		hash, err = HashPassword(s.cfg.Passwords, pw)
	}
	if err != nil {
		return NewAccount{}, err
	}
	if err := s.store.SetAdminPassword(ctx, id, hash, true, s.now()); err != nil {
		return NewAccount{}, err
	}
	if acc, err = s.account(ctx, id); err != nil {
		return NewAccount{}, err
	}
	if err := s.record(ctx, a, "account.reset_password", "admin", id, "", map[string]any{"username": acc.Username}); err != nil {
		return NewAccount{}, err
	}
	return NewAccount{Account: accountOf(acc), OneTimePassword: pw}, nil
}

// staleSessions is how long an ended session's row is kept, for an investigation.
const staleSessions = 7 * 24 * time.Hour

// errBadLogin is the one answer to a wrong username, a wrong password and a disabled account
// alike, so a login tells nothing about which accounts exist.
var errBadLogin = contract.Errorf(contract.KindUnauthorized, "Invalid username or password")

// Login starts a session for a username and password from ip that match an enabled account,
// returning it with its token (sent once, in the cookie); every failure is errBadLogin (401).
// The throttle counts the check before the password is hashed, and refuses it (429) while
// locked. An account that must change its password may only do that and log out.
func (s *Service) Login(ctx context.Context, username, password, userAgent, ip string) (*Session, string, error) {
	name, err := normalizeUsername(username)
	if err != nil || len(password) > maxPasswordLen {
		// Not an account anyone could have: no need to count it, and nothing to hash.
		return nil, "", errBadLogin
	}
	try, err := s.reserveAttempt(ctx, name, ip)
	if err != nil {
		return nil, "", err
	}
	acc, err := s.store.AdminAccountByUsername(ctx, name)
	found := err == nil
	if err != nil && !errors.Is(err, contract.ErrNotFound) {
		s.abandoned(ctx, try)
		return nil, "", err
	}
	hash := s.dummyHash
	if found {
		hash = acc.PasswordHash
	}
	ok, err := CheckPassword(hash, password)
	if err != nil {
		s.log.ErrorContext(ctx, "console: stored password hash unreadable", "admin", name, "err", err)
		ok = false
	}
	if !found || !ok || acc.Disabled {
		// The attempt reserved stays counted: it is the failure. A name no account has is not
		// recorded in the audit log: it may be a password typed into the wrong field.
		actor := Actor{IP: ip}
		if found {
			actor.AdminID, actor.Username = acc.ID, acc.Username
		}
		if err := s.record(ctx, actor, "login.failed", "admin", actor.AdminID, "", map[string]any{"account_exists": found}); err != nil {
			return nil, "", err
		}
		return nil, "", errBadLogin
	}
	if err := s.succeeded(ctx, try); err != nil {
		return nil, "", err
	}
	se, token, err := s.newSession(ctx, acc, userAgent, ip)
	if err != nil {
		return nil, "", err
	}
	// Sessions that ended long ago are of no use to anyone; a login clears them away.
	if _, err := s.store.DeleteStaleAdminSessions(ctx, s.now().Add(-staleSessions)); err != nil {
		s.log.WarnContext(ctx, "console: delete stale sessions", "err", err)
	}
	if err := s.record(ctx, se.Actor(ip), "login", "admin", acc.ID, "", map[string]any{"must_change_password": acc.MustChangePassword}); err != nil {
		return nil, "", err
	}
	return se, token, nil
}

// ChangePassword replaces the account's password after checking the current one. Every session
// of the account ends; the new session returned replaces this one, so only this browser stays
// logged in.
func (s *Service) ChangePassword(ctx context.Context, se *Session, current, next, userAgent, ip string) (*Session, string, error) {
	acc := se.Account
	try, err := s.reserveAttempt(ctx, acc.Username, ip)
	if err != nil {
		return nil, "", err
	}
	ok, err := CheckPassword(acc.PasswordHash, current)
	if err != nil {
		s.abandoned(ctx, try)
		return nil, "", err
	}
	if !ok {
		// The attempt reserved stays counted: it is the failure.
		return nil, "", contract.Errorf(contract.KindForbidden, "The current password is wrong")
	}
	if err := s.succeeded(ctx, try); err != nil {
		return nil, "", err
	}
	if err := checkNewPassword(next, acc.Username); err != nil {
		return nil, "", invalid(err)
	}
	if next == current {
		return nil, "", contract.Errorf(contract.KindInvalid, "The new password must differ from the current one")
	}
	hash, err := HashPassword(s.cfg.Passwords, next)
	if err != nil {
		return nil, "", err
	}
	if err := s.store.SetAdminPassword(ctx, acc.ID, hash, false, s.now()); err != nil {
		return nil, "", err
	}
	fresh, err := s.store.AdminAccount(ctx, acc.ID)
	if err != nil {
		return nil, "", err
	}
	nse, token, err := s.newSession(ctx, fresh, userAgent, ip)
	if err != nil {
		return nil, "", err
	}
	if err := s.record(ctx, se.Actor(ip), "account.change_password", "admin", acc.ID, "", nil); err != nil {
		return nil, "", err
	}
	return nse, token, nil
}

func (s *Service) oneTimePassword() (pw, hash string, err error) {
	if pw, err = NewOneTimePassword(); err != nil {
		return "", "", err
	}
	if hash, err = HashPassword(s.cfg.Passwords, pw); err != nil {
		return "", "", err
	}
	return pw, hash, nil
}

// PasswordParams are argon2id's cost for new hashes; a stored hash carries its own.
type PasswordParams struct {
	MemoryKiB uint32
	Time      uint32
	Threads   uint8
}

// DefaultPasswordParams is OWASP's first argon2id recommendation (19 MiB, 2 passes, 1 lane): tens
// of milliseconds a login on one core, so a guessing attacker with a stolen table pays the same.
func DefaultPasswordParams() PasswordParams {
	return PasswordParams{MemoryKiB: 19 * 1024, Time: 2, Threads: 1}
}

// Password length bounds: 12 characters is the least a human-chosen password may have; the
// upper bound keeps one login's hashing input small.
const (
	minPasswordLen = 12
	maxPasswordLen = 256
)

// HashPassword hashes password with argon2id and a fresh salt, as a PHC string other tools read.
func HashPassword(p PasswordParams, password string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("password salt: %w", err)
	}
	sum := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, 32)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.MemoryKiB, p.Time, p.Threads,
		b64.EncodeToString(salt), b64.EncodeToString(sum)), nil
}

var errBadHash = errors.New("password hash is not an argon2id PHC string")

// CheckPassword tells whether password matches the PHC string phc, in constant time.
func CheckPassword(phc, password string) (bool, error) {
	parts := strings.Split(phc, "$")
	// "", "argon2id", "v=19", "m=…,t=…,p=…", salt, hash
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return false, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errBadHash
	}
	var p PasswordParams
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.MemoryKiB, &p.Time, &p.Threads); err != nil ||
		p.MemoryKiB == 0 || p.Time == 0 || p.Threads == 0 || p.MemoryKiB > 4<<20 || p.Time > 64 {
		return false, errBadHash
	}
	b64 := base64.RawStdEncoding
	salt, err := b64.DecodeString(parts[4])
	if err != nil || len(salt) < 8 {
		return false, errBadHash
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) < 16 {
		return false, errBadHash
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.MemoryKiB, p.Threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// oneTimeAlphabet has no look-alike characters: a password read off a terminal survives typing.
const oneTimeAlphabet = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"

// NewOneTimePassword draws a 20-character password (about 116 bits) for a first login.
func NewOneTimePassword() (string, error) {
	out := make([]byte, 20)
	for i := range out {
		n, err := rand.Int(rand.Reader, big.NewInt(int64(len(oneTimeAlphabet))))
		if err != nil {
			return "", fmt.Errorf("one-time password: %w", err)
		}
		out[i] = oneTimeAlphabet[n.Int64()]
	}
	return string(out), nil
}

// checkNewPassword refuses a password an account may not choose.
func checkNewPassword(pw, username string) error {
	switch n := utf8.RuneCountInString(pw); {
	case !utf8.ValidString(pw):
		return errors.New("password must be valid UTF-8")
	case n < minPasswordLen:
		return fmt.Errorf("password must be at least %d characters", minPasswordLen)
	case len(pw) > maxPasswordLen:
		return fmt.Errorf("password must be at most %d bytes", maxPasswordLen)
	case strings.EqualFold(pw, username):
		return errors.New("password must not be the username")
	}
	return nil
}

// ThrottlePolicy bounds password guessing. Every check is counted before it is made against
// three subjects: a username from one address (PairFailures within Window lock the pair for
// BaseLock, doubled per further failure up to MaxLock, so its owner is not locked out
// elsewhere); an address (IPFailures, locked the same way); a username from anywhere (past
// AccountFailures, checked at most once per AccountSpacing, never locked). A locked subject's
// login is refused (429) without looking at the password; usernames count whether or not an
// account has them. A right password gives its attempt back and clears its pair.
type ThrottlePolicy struct {
	PairFailures    int           // failures of one username from one address that lock the pair
	IPFailures      int           // failures from one address that lock it (higher: offices share one)
	AccountFailures int           // failures of one username from anywhere past which its checks are spaced
	AccountSpacing  time.Duration // the least time between two checks of such a username's password
	Window          time.Duration // a failure older than this no longer counts
	BaseLock        time.Duration
	MaxLock         time.Duration
}

// DefaultThrottle: 5 failures of a username from one address, or 20 from one address, within
// 15 minutes lock that pair or address for 30 s, then 1 min, 2 min, … up to an hour; past 10
// failures of a username from anywhere, its password is checked at most once every 2 s.
func DefaultThrottle() ThrottlePolicy {
	return ThrottlePolicy{PairFailures: 5, IPFailures: 20, AccountFailures: 10, AccountSpacing: 2 * time.Second,
		Window: 15 * time.Minute, BaseLock: 30 * time.Second, MaxLock: time.Hour}
}

func (p ThrottlePolicy) withDefaults() ThrottlePolicy {
	d := DefaultThrottle()
	p.PairFailures = orDefault(p.PairFailures, d.PairFailures)
	p.IPFailures = orDefault(p.IPFailures, d.IPFailures)
	p.AccountFailures = orDefault(p.AccountFailures, d.AccountFailures)
	p.AccountSpacing = orDefault(p.AccountSpacing, d.AccountSpacing)
	p.Window = orDefault(p.Window, d.Window)
	p.BaseLock = orDefault(p.BaseLock, d.BaseLock)
	p.MaxLock = orDefault(p.MaxLock, d.MaxLock)
	return p
}

// orDefault is v, or def when v is not positive.
func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// lockFor is how long failures lock a subject: BaseLock at threshold, doubled up to MaxLock.
func (p ThrottlePolicy) lockFor(threshold int) func(failures int) time.Duration {
	return func(failures int) time.Duration {
		if failures < threshold {
			return 0
		}
		d := p.BaseLock
		for i := threshold; i < failures && d < p.MaxLock; i++ {
			d *= 2
		}
		return min(d, p.MaxLock)
	}
}

func (p ThrottlePolicy) spacing(failures int) time.Duration {
	if failures < p.AccountFailures {
		return 0
	}
	return p.AccountSpacing
}

// limits are the subjects a password check counts against; without an address, the username's.
func (p ThrottlePolicy) limits(username, ip string) []contract.LoginLimit {
	ls := []contract.LoginLimit{
		{Subject: pairSubject(username, ip), LockFor: p.lockFor(p.PairFailures)},
		{Subject: "account:" + usernameHash(username), LockFor: p.spacing},
	}
	if ip != "" {
		ls = append(ls, contract.LoginLimit{Subject: "ip:" + ip, LockFor: p.lockFor(p.IPFailures)})
	}
	return ls
}

// usernameHash keeps a username (maybe a mistyped password) out of the throttle's keys.
func usernameHash(username string) string {
	h := sha256.Sum256([]byte(username))
	return hex.EncodeToString(h[:])
}

func pairSubject(username, ip string) string { return "pair:" + usernameHash(username) + "@" + ip }

// attempt is one password check the throttle let through, a failure until it succeeded.
type attempt struct {
	username, ip string
	reservation  contract.LoginReservation
}

// reserveAttempt counts a password check before it is made, or refuses it while one of its
// subjects is locked. Counting first (in PostgreSQL, shared by every instance) bounds parallel
// guesses: no more checks run than the thresholds allow.
func (s *Service) reserveAttempt(ctx context.Context, username, ip string) (*attempt, error) {
	p := s.cfg.Throttle
	now := s.now()
	r, until, ok, err := s.store.ReserveLoginAttempt(ctx, p.limits(username, ip), now, p.Window)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &contract.Error{Kind: contract.KindRateLimited, Message: "Too many failed logins; try again later", Wait: until.Sub(now)}
	}
	return &attempt{username: username, ip: ip, reservation: r}, nil
}

// succeeded gives back a right password's attempt and clears its pair's failures.
func (s *Service) succeeded(ctx context.Context, a *attempt) error {
	if err := s.store.RefundLoginAttempt(ctx, a.reservation); err != nil {
		return err
	}
	return s.store.ClearLoginFailures(ctx, pairSubject(a.username, a.ip))
}

// abandoned gives back the attempt of a check never made, so an outage counts against no one.
func (s *Service) abandoned(ctx context.Context, a *attempt) {
	if err := s.store.RefundLoginAttempt(ctx, a.reservation); err != nil {
		s.log.WarnContext(ctx, "console: give back a login attempt", "err", err)
	}
}
