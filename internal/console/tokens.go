package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
)

// Admin API tokens let the acv command and automation call the admin API without a browser
// session: "Authorization: Bearer acv_…". A token acts as the account that made it, with a
// role no higher than that account's, until it expires or is revoked; every action it takes is
// recorded in the admin audit log under the account's name and the token's. Only the SHA-256
// of its secret is stored.

// TokenPrefix starts every token, so a leaked one is recognisable (secret scanners, logs).
const TokenPrefix = "acv_"

// Token lifetimes: DefaultTokenTTL when a request names none, MaxTokenTTL at most.
const (
	DefaultTokenTTL = 30 * 24 * time.Hour
	MaxTokenTTL     = 366 * 24 * time.Hour
)

// Token and NewToken are the admin API's token views (the contract's: the acv command reads the
// same types).
type (
	Token    = contract.APIToken
	NewToken = contract.NewAPIToken
)

func tokenOf(t contract.AdminToken) Token {
	unix := func(v *time.Time) *int64 {
		if v == nil {
			return nil
		}
		u := v.Unix()
		return &u
	}
	return Token{ID: t.ID, Name: t.Name, Role: t.Role, OwnerID: t.Admin.ID, Owner: t.Admin.Username,
		CreatedAt: t.CreatedAt.Unix(), ExpiresAt: t.ExpiresAt.Unix(), LastUsedAt: unix(t.LastUsedAt), RevokedAt: unix(t.RevokedAt)}
}

// errBadToken is every reason a bearer token is refused: malformed, unknown, expired, revoked,
// its account disabled. The client is told to log in again.
var errBadToken = contract.Errorf(contract.KindUnauthorized, "The API token is invalid, expired or revoked: log in again (acv login)")

// CreateToken makes a token for the actor's own account. role "" is the actor's role; a role
// above it is refused. ttl 0 is DefaultTokenTTL.
func (s *Service) CreateToken(ctx context.Context, a Actor, name string, role Role, ttl time.Duration) (NewToken, error) {
	if err := a.require(RoleViewer); err != nil {
		return NewToken{}, err
	}
	if a.AdminID == "" {
		return NewToken{}, errors.New("console: a token belongs to an account; the actor has none")
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return NewToken{}, contract.Errorf(contract.KindInvalid, "Field name is required")
	}
	if err := contract.ValidateText("name", name, 100); err != nil {
		return NewToken{}, contract.Errorf(contract.KindInvalid, "%s", capitalize(err.Error()))
	}
	if role == "" {
		role = a.Role
	}
	if _, err := ParseRole(string(role)); err != nil {
		return NewToken{}, contract.Errorf(contract.KindInvalid, "%s", capitalize(err.Error()))
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
	raw := make([]byte, tokenLen)
	if _, err := rand.Read(raw); err != nil {
		return NewToken{}, fmt.Errorf("token secret: %w", err)
	}
	hash := sha256.Sum256(raw)
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
	if err := a.require(RoleViewer); err != nil {
		return nil, err
	}
	owner := a.AdminID
	if a.Role.Allows(RoleAdmin) {
		owner = ""
	}
	ts, err := s.store.AdminTokens(ctx, owner)
	if err != nil {
		return nil, err
	}
	out := make([]Token, 0, len(ts))
	for _, t := range ts {
		out = append(out, tokenOf(t))
	}
	return out, nil
}

// RevokeToken ends a token at once: an admin may revoke any, anyone else their own (another
// account's is not found, so it tells nothing).
func (s *Service) RevokeToken(ctx context.Context, a Actor, id string) (Token, error) {
	if err := a.require(RoleViewer); err != nil {
		return Token{}, err
	}
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

// SessionByAPIToken is the request's session when it carries a bearer token: the token's
// account, with the token's role when that is lower than the account's. errBadToken (401) when
// the token is malformed or unknown, expired or revoked, or its account is disabled.
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
