package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
)

// SessionPolicy bounds a session: it ends Idle after its last request, Lifetime after login.
type SessionPolicy struct {
	Idle     time.Duration
	Lifetime time.Duration
}

// DefaultSessionPolicy: 30 minutes idle, 12 hours at most (a working day).
func DefaultSessionPolicy() SessionPolicy {
	return SessionPolicy{Idle: 30 * time.Minute, Lifetime: 12 * time.Hour}
}

// touchEvery is how stale last_seen_at may grow (one write a minute per session); tokenLen is
// a secret's length in bytes before encoding: 256 bits from crypto/rand.
const (
	touchEvery = time.Minute
	tokenLen   = 32
)

// Session is a valid session and its account, as a request sees them.
type Session struct {
	id    []byte // the SHA-256 of the token: its row's key
	token []byte
	// Account is read on every request, so a change of role or password applies at once.
	Account   contract.AdminAccount
	ExpiresAt time.Time
	// apiToken is a bearer token's, nil for a cookie session: it needs no CSRF token (no browser
	// sends it by itself) and its actions are recorded under its name too.
	apiToken *Token
}

// CSRFToken is an HMAC under the session token that only the cookie's holder can know.
func (se *Session) CSRFToken() string {
	m := hmac.New(sha256.New, se.token)
	m.Write([]byte("acv console csrf v1"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Actor is the session's account acting from ip.
func (se *Session) Actor(ip string) Actor {
	name := se.Account.Username
	if se.apiToken != nil {
		name = fmt.Sprintf("%s (token %s %s)", name, se.apiToken.Name, se.apiToken.ID)
	}
	return Actor{AdminID: se.Account.ID, Username: name, Role: Role(se.Account.Role), IP: ip}
}

// errNoSession is every reason a request has no valid session: it is told only to log in.
var errNoSession = contract.Errorf(contract.KindUnauthorized, "Not logged in, or the session ended: log in again")

// newSession records a session for account and returns it with its token, sent once.
func (s *Service) newSession(ctx context.Context, account contract.AdminAccount, userAgent, ip string) (*Session, string, error) {
	token, id, err := newSecret()
	if err != nil {
		return nil, "", err
	}
	now := s.now()
	se := &Session{id: id[:], token: token, Account: account, ExpiresAt: now.Add(s.cfg.Sessions.Lifetime)}
	if len(userAgent) > 512 {
		userAgent = userAgent[:512]
	}
	err = s.store.CreateAdminSession(ctx, contract.NewAdminSession{
		ID: se.id, AdminID: account.ID, Now: now, ExpiresAt: se.ExpiresAt, UserAgent: userAgent, ClientIP: ip,
	})
	if err != nil {
		return nil, "", err
	}
	return se, base64.RawURLEncoding.EncodeToString(token), nil
}

// SessionByToken finds the valid session of a cookie's token, else errNoSession (401).
func (s *Service) SessionByToken(ctx context.Context, token string) (*Session, error) {
	raw, id, ok := decodeSecret(token)
	if !ok {
		return nil, errNoSession
	}
	row, err := s.store.AdminSession(ctx, id[:])
	if errors.Is(err, contract.ErrNotFound) {
		return nil, errNoSession
	}
	if err != nil {
		return nil, err
	}
	now := s.now()
	switch {
	case row.RevokedAt != nil, !now.Before(row.ExpiresAt), row.Admin.Disabled,
		now.Sub(row.LastSeenAt) >= s.cfg.Sessions.Idle,
		// A password change revokes sessions; this also covers a session created during it.
		row.Admin.PasswordChangedAt.After(row.CreatedAt):
		return nil, errNoSession
	}
	if now.Sub(row.LastSeenAt) >= touchEvery {
		if err := s.store.TouchAdminSession(ctx, row.ID, now); err != nil {
			s.log.WarnContext(ctx, "console: could not extend a session", "err", err)
		}
	}
	return &Session{id: row.ID, token: raw, Account: row.Admin, ExpiresAt: row.ExpiresAt}, nil
}

// Logout ends a session and records it; for a bearer token, it revokes the token.
func (s *Service) Logout(ctx context.Context, se *Session, ip string) error {
	if se.apiToken != nil {
		_, err := s.RevokeToken(ctx, se.Actor(ip), se.apiToken.ID)
		return err
	}
	if err := s.store.RevokeAdminSession(ctx, se.id, s.now()); err != nil {
		return err
	}
	return s.record(ctx, se.Actor(ip), "logout", "admin", se.Account.ID, "", nil)
}

// newSecret draws a secret of tokenLen bytes and its SHA-256, the form the store keeps.
func newSecret() (raw []byte, hash [sha256.Size]byte, err error) {
	raw = make([]byte, tokenLen)
	if _, err := rand.Read(raw); err != nil {
		return nil, hash, fmt.Errorf("draw a secret: %w", err)
	}
	return raw, sha256.Sum256(raw), nil
}

// decodeSecret reads a secret (base64url of tokenLen bytes) and its SHA-256, the store's key.
func decodeSecret(enc string) (raw []byte, hash [sha256.Size]byte, ok bool) {
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(raw) != tokenLen {
		return nil, hash, false
	}
	return raw, sha256.Sum256(raw), true
}

// Admin API tokens ("Authorization: Bearer acv_…") act as the account that made it, with a
// role no higher, until expired or revoked; only the SHA-256 of the secret is stored.

// TokenPrefix starts every token, so a leaked one is recognisable (secret scanners, logs).
const TokenPrefix = "acv_"

// Token lifetimes: DefaultTokenTTL when a request names none, MaxTokenTTL at most.
const (
	DefaultTokenTTL = 30 * 24 * time.Hour
	MaxTokenTTL     = 366 * 24 * time.Hour
)

// Token and NewToken are the admin API's token views, the contract's.
type (
	Token    = contract.APIToken
	NewToken = contract.NewAPIToken
)

func tokenOf(t contract.AdminToken) Token {
	unix := func(v *time.Time) *int64 {
		if v == nil {
			return nil
		}
		return new(v.Unix())
	}
	return Token{ID: t.ID, Name: t.Name, Role: t.Role, OwnerID: t.Admin.ID, Owner: t.Admin.Username,
		CreatedAt: t.CreatedAt.Unix(), ExpiresAt: t.ExpiresAt.Unix(), LastUsedAt: unix(t.LastUsedAt), RevokedAt: unix(t.RevokedAt)}
}

var errBadToken = contract.Errorf(contract.KindUnauthorized, "The API token is invalid, expired or revoked: log in again (acv login)")

// CreateToken makes a token for the actor's own account, of their role at most (ttl 0: default).
func (s *Service) CreateToken(ctx context.Context, a Actor, name string, role Role, ttl time.Duration) (NewToken, error) {
	if a.AdminID == "" {
		return NewToken{}, errors.New("console: a token belongs to an account; the actor has none")
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return NewToken{}, contract.Errorf(contract.KindInvalid, "Field name is required")
	}
	if err := contract.ValidateText("name", name, 100); err != nil {
		return NewToken{}, invalid(err)
	}
	if role == "" {
		role = a.Role
	}
	if _, err := ParseRole(string(role)); err != nil {
		return NewToken{}, invalid(err)
	}
	if err := a.require(role); err != nil {
		return NewToken{}, contract.Errorf(contract.KindForbidden, "A token's role may not be above your own (%s)", a.Role)
	}
	switch {
	case ttl == 0:
		ttl = DefaultTokenTTL
	case ttl < time.Minute || ttl > MaxTokenTTL:
		return NewToken{}, contract.Errorf(contract.KindInvalid, "A token lasts from a minute to %d days", int(MaxTokenTTL/(24*time.Hour)))
	}
	raw, hash, err := newSecret()
	if err != nil {
		return NewToken{}, err
	}
	now := s.now()
	t, err := s.store.CreateAdminToken(ctx, contract.NewAdminToken{
		Hash: hash[:], Name: name, AdminID: a.AdminID, Role: string(role), Now: now, ExpiresAt: now.Add(ttl),
	})
	if err != nil {
		return NewToken{}, err
	}
	if err := s.record(ctx, a, "token.create", "admin_token", t.ID, "", map[string]any{
		"name": t.Name, "role": t.Role, "expires_at": t.ExpiresAt.Unix(),
	}); err != nil {
		return NewToken{}, err
	}
	return NewToken{APIToken: tokenOf(t), Secret: TokenPrefix + base64.RawURLEncoding.EncodeToString(raw)}, nil
}

// Tokens lists the tokens, newest first: an admin sees every account's, anyone else their own.
func (s *Service) Tokens(ctx context.Context, a Actor) ([]Token, error) {
	owner := a.AdminID
	if a.Role.Allows(RoleAdmin) {
		owner = ""
	}
	ts, err := s.store.AdminTokens(ctx, owner)
	return convert(ts, tokenOf), err
}

// RevokeToken ends a token: an admin's any, anyone else's own (another's is not found).
func (s *Service) RevokeToken(ctx context.Context, a Actor, id string) (Token, error) {
	t, err := s.store.AdminToken(ctx, id)
	if err == nil && t.Admin.ID != a.AdminID && !a.Role.Allows(RoleAdmin) {
		err = contract.ErrNotFound
	}
	if errors.Is(err, contract.ErrNotFound) {
		return Token{}, contract.Errorf(contract.KindNotFound, "API token %s not found", id)
	}
	if err != nil {
		return Token{}, err
	}
	if err := s.store.RevokeAdminToken(ctx, id, s.now()); err != nil {
		return Token{}, err
	}
	if err := s.record(ctx, a, "token.revoke", "admin_token", id, "", map[string]any{"name": t.Name, "owner": t.Admin.Username}); err != nil {
		return Token{}, err
	}
	if t, err = s.store.AdminToken(ctx, id); err != nil {
		return Token{}, err
	}
	return tokenOf(t), nil
}

// SessionByAPIToken is a bearer token's session, of the token's role when lower (else errBadToken).
func (s *Service) SessionByAPIToken(ctx context.Context, secret string) (*Session, error) {
	enc, ok := strings.CutPrefix(secret, TokenPrefix)
	if !ok {
		return nil, errBadToken
	}
	_, hash, ok := decodeSecret(enc)
	if !ok {
		return nil, errBadToken
	}
	t, err := s.store.AdminTokenByHash(ctx, hash[:])
	if errors.Is(err, contract.ErrNotFound) {
		return nil, errBadToken
	}
	if err != nil {
		return nil, err
	}
	now := s.now()
	if t.RevokedAt != nil || !now.Before(t.ExpiresAt) || t.Admin.Disabled {
		return nil, errBadToken
	}
	if err := s.store.TouchAdminToken(ctx, t.ID, now); err != nil {
		s.log.WarnContext(ctx, "console: could not record a token's use", "token", t.ID, "err", err)
	}
	acc := t.Admin
	if !Role(t.Role).Allows(Role(acc.Role)) {
		acc.Role = t.Role
	}
	return &Session{Account: acc, ExpiresAt: t.ExpiresAt, apiToken: &Token{ID: t.ID, Name: t.Name}}, nil
}
