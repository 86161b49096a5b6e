package console

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
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

// normalizeUsername lowercases a username, so logins are case-insensitive, and checks it.
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

// CreateAccount creates an account with a one-time password drawn from crypto/rand (admin
// only). The account must change the password at its first login before anything else; the
// password is returned once and stored only as its argon2id hash.
func (s *Service) CreateAccount(ctx context.Context, a Actor, username string, role Role) (NewAccount, error) {
	if err := a.require(RoleAdmin); err != nil {
		return NewAccount{}, err
	}
	name, err := normalizeUsername(username)
	if err != nil {
		return NewAccount{}, err
	}
	if _, err := ParseRole(string(role)); err != nil {
		return NewAccount{}, contract.Errorf(contract.KindInvalid, "%s", capitalize(err.Error()))
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

// Accounts lists every account (admin only).
func (s *Service) Accounts(ctx context.Context, a Actor) ([]Account, error) {
	if err := a.require(RoleAdmin); err != nil {
		return nil, err
	}
	rows, err := s.store.AdminAccounts(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Account, 0, len(rows))
	for _, r := range rows {
		out = append(out, accountOf(r))
	}
	return out, nil
}

// account reads one account by id, as a refusal that names it when missing.
func (s *Service) account(ctx context.Context, id string) (contract.AdminAccount, error) {
	acc, err := s.store.AdminAccount(ctx, id)
	if errors.Is(err, contract.ErrNotFound) {
		return acc, contract.Errorf(contract.KindNotFound, "Account %s not found", id)
	}
	return acc, err
}

// notSelf refuses an admin's change of their own role or state: the last admin could lock
// everyone out. Another admin does it.
func notSelf(a Actor, id string) error {
	if a.AdminID != "" && a.AdminID == id {
		return contract.Errorf(contract.KindConflict, "You cannot change your own account's role or state; ask another admin")
	}
	return nil
}

// SetAccountDisabled disables (ending its sessions) or enables an account (admin only).
func (s *Service) SetAccountDisabled(ctx context.Context, a Actor, id string, disabled bool) error {
	if err := a.require(RoleAdmin); err != nil {
		return err
	}
	if err := notSelf(a, id); err != nil {
		return err
	}
	acc, err := s.account(ctx, id)
	if err != nil {
		return err
	}
	if err := s.store.SetAdminDisabled(ctx, id, disabled, s.now()); err != nil {
		return err
	}
	action := "account.enable"
	if disabled {
		action = "account.disable"
	}
	return s.record(ctx, a, action, "admin", id, "", map[string]any{"username": acc.Username})
}

// SetAccountRole changes an account's role (admin only); it applies to the account's next
// request.
func (s *Service) SetAccountRole(ctx context.Context, a Actor, id string, role Role) error {
	if err := a.require(RoleAdmin); err != nil {
		return err
	}
	if _, err := ParseRole(string(role)); err != nil {
		return contract.Errorf(contract.KindInvalid, "%s", capitalize(err.Error()))
	}
	if err := notSelf(a, id); err != nil {
		return err
	}
	acc, err := s.account(ctx, id)
	if err != nil {
		return err
	}
	if err := s.store.SetAdminRole(ctx, id, string(role)); err != nil {
		return err
	}
	return s.record(ctx, a, "account.role", "admin", id, "", map[string]any{
		"username": acc.Username, "from": acc.Role, "to": string(role)})
}

// ResetPassword gives an account a new one-time password (admin only): its sessions end, and
// its next login must change the password first. password "" draws one; otherwise that one is
// set (the admin passes it on out of band). The password is returned once.
func (s *Service) ResetPassword(ctx context.Context, a Actor, id, password string) (NewAccount, error) {
	if err := a.require(RoleAdmin); err != nil {
		return NewAccount{}, err
	}
	if err := notSelf(a, id); err != nil {
		return NewAccount{}, err
	}
	acc, err := s.account(ctx, id)
	if err != nil {
		return NewAccount{}, err
	}
	var pw, hash string
	if password == "" {
		pw, hash, err = s.oneTimePassword()
	} else if err = checkNewPassword(password, acc.Username); err != nil {
		err = contract.Errorf(contract.KindInvalid, "%s", capitalize(err.Error()))
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

// Login checks a username and password from ip and, when they match an enabled account,
// starts a session and returns it with its token (for the cookie, sent once). Every failure
// is errBadLogin (401). The check is counted by the throttle before the password is hashed
// (reserveAttempt); while the username from that address, the address, or the username's next
// check is held back, the answer is a *LockedError (429) without checking the password. An
// account that must change its password gets a session all the same: the server lets it
// change the password and log out, nothing else (Server.mustChange).
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

// ChangePassword replaces the session's account's password after checking the current one.
// Every session of the account ends, this one too; the new session returned (with its token)
// replaces it, so the browser that changed the password stays logged in and every other one
// must log in again. must_change_password is cleared.
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
		return nil, "", contract.Errorf(contract.KindInvalid, "%s", capitalize(err.Error()))
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

// capitalize starts a message with a capital letter, as the API's details do.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// oneTimePassword draws a one-time password and its hash, for a new account or a reset.
func (s *Service) oneTimePassword() (pw, hash string, err error) {
	if pw, err = NewOneTimePassword(); err != nil {
		return "", "", err
	}
	if hash, err = HashPassword(s.cfg.Passwords, pw); err != nil {
		return "", "", err
	}
	return pw, hash, nil
}
