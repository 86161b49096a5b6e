package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/acv/acv/api/contract"
)

// SessionPolicy bounds a session: it ends Idle after its last request, and Lifetime after the
// login whatever happens.
type SessionPolicy struct {
	Idle     time.Duration
	Lifetime time.Duration
}

// DefaultSessionPolicy: 30 minutes idle, 12 hours at most (a working day).
func DefaultSessionPolicy() SessionPolicy {
	return SessionPolicy{Idle: 30 * time.Minute, Lifetime: 12 * time.Hour}
}

// touchEvery is how stale last_seen_at may grow before a request moves it: at most one write a
// minute per session, whatever the request rate; the idle timeout is that much less exact.
const touchEvery = time.Minute

// tokenLen is the session token's length in bytes before encoding: 256 bits from crypto/rand.
const tokenLen = 32

// Session is a valid session and its account, as a request sees them.
type Session struct {
	// id is the SHA-256 of the token: the key of its row.
	id    []byte
	token []byte
	// Account is read with the session on every request, so a change of role, a disabled
	// account or a new password applies to the next request.
	Account contract.AdminAccount
	// ExpiresAt is the absolute end of the session.
	ExpiresAt time.Time
	// apiToken is the bearer token the request came with, nil for a cookie session. Such a
	// request needs no CSRF token (no browser sends it by itself) and its actions are recorded
	// under the token's name too.
	apiToken *Token
}

// CSRFToken is the value every unsafe request of this session must carry (csrf.go): an HMAC of
// a fixed label under the session token. Only a holder of the token (the browser that logged
// in, which sends it as an HttpOnly cookie another site cannot read) can know it, nothing of it
// is stored, and every console instance derives the same value.
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

// errNoSession is every reason a request has no valid session: no cookie, an unknown token,
// expired, idle, revoked, the account disabled. The client is told only to log in.
var errNoSession = contract.Errorf(contract.KindUnauthorized, "Not logged in, or the session ended: log in again")

// newSession records a session for account and returns it with its token, to be sent once, in
// the cookie.
func (s *Service) newSession(ctx context.Context, account contract.AdminAccount, userAgent, ip string) (*Session, string, error) {
	token := make([]byte, tokenLen)
	if _, err := rand.Read(token); err != nil {
		return nil, "", fmt.Errorf("session token: %w", err)
	}
	id := sha256.Sum256(token)
	now := s.now()
	se := &Session{id: id[:], token: token, Account: account, ExpiresAt: now.Add(s.cfg.Sessions.Lifetime)}
	if len(userAgent) > 512 {
		userAgent = userAgent[:512]
	}
	err := s.store.CreateAdminSession(ctx, contract.NewAdminSession{
		ID: se.id, AdminID: account.ID, Now: now, ExpiresAt: se.ExpiresAt, UserAgent: userAgent, ClientIP: ip,
	})
	if err != nil {
		return nil, "", err
	}
	return se, base64.RawURLEncoding.EncodeToString(token), nil
}

// SessionByToken finds the valid session of a cookie's token. errNoSession (401) when the
// token is malformed or unknown, or the session expired, idled out or was revoked, or its
// account is disabled or changed its password after the session began.
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

// decodeSecret reads a session cookie's or an API token's secret (base64url of tokenLen random
// bytes) and its SHA-256, the form the store keeps and looks it up by; false when enc is not
// such a secret.
func decodeSecret(enc string) (raw []byte, hash [sha256.Size]byte, ok bool) {
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(raw) != tokenLen {
		return nil, hash, false
	}
	return raw, sha256.Sum256(raw), true
}
