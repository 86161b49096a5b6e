package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/console"
)

// bearer is an API client holding a token: no cookie, no CSRF token.
func (e *env) bearer(secret string) *client {
	c := e.client()
	c.header.Set("Authorization", "Bearer "+secret)
	return c
}

// newToken makes a token through the API as the logged-in client c.
func newToken(t *testing.T, c *client, name string, role console.Role, ttl time.Duration) console.NewToken {
	t.Helper()
	res, body := c.do("POST", "/tokens", map[string]any{"name": name, "role": role, "expires_in": int64(ttl / time.Second)})
	expect(t, "create token "+name, res, body, http.StatusCreated)
	var nt console.NewToken
	decode(t, body, &nt)
	return nt
}

// TestTokenBearerAPI: a token made by a session acts through the API with its role, without a
// CSRF token; every change it makes is recorded under its owner's name and its own; it ends
// at its expiry, when revoked, when its owner is disabled, and by a logout with it.
func TestTokenBearerAPI(t *testing.T) {
	e := newEnv(t, nil)
	adm := e.account("alice", console.RoleAdmin)
	op := newToken(t, adm, "ci", console.RoleOperator, time.Hour)
	if !strings.HasPrefix(op.Secret, console.TokenPrefix) || op.Owner != "alice" || op.Role != string(console.RoleOperator) {
		t.Fatalf("new token %+v", op)
	}
	ci := e.bearer(op.Secret)
	res, body := ci.do("POST", "/projects", map[string]string{"name": "Via token"})
	expect(t, "operator token creates a project", res, body, http.StatusCreated)
	rows, err := e.store.AdminAudit(context.Background(), contract.AuditFilter{Action: "project.create"})
	if err != nil || len(rows) != 1 || rows[0].AdminUsername != "alice (token ci "+op.ID+")" {
		t.Fatalf("project.create recorded as %+v, %v", rows, err)
	}
	res, body = ci.do("POST", "/accounts", map[string]string{"username": "bob", "role": "viewer"})
	expect(t, "operator token creates an account", res, body, http.StatusForbidden)
	res, body = ci.do("POST", "/tokens", map[string]any{"name": "successor"})
	expect(t, "operator token makes another token", res, body, http.StatusForbidden)

	// A token's role is at most its owner's: asked for more, refused; the owner demoted, the
	// token acts at the owner's new role.
	sup := e.account("sue", console.RoleSupport)
	res, body = sup.do("POST", "/tokens", map[string]any{"name": "up", "role": "admin"})
	expect(t, "support session asks an admin token", res, body, http.StatusForbidden)
	st := newToken(t, sup, "own", "", time.Hour)
	if st.Role != string(console.RoleSupport) {
		t.Errorf("default role %s, want the owner's", st.Role)
	}
	var accounts struct {
		Items []console.Account `json:"items"`
	}
	res, body = adm.do("GET", "/accounts", nil)
	decode(t, body, &accounts)
	var sueID string
	for _, a := range accounts.Items {
		if a.Username == "sue" {
			sueID = a.ID
		}
	}
	res, body = adm.do("PUT", "/accounts/"+sueID+"/role", map[string]string{"role": "viewer"})
	expect(t, "demote sue", res, body, http.StatusOK)
	res, body = e.bearer(st.Secret).do("POST", "/projects/"+strings.Repeat("0", 32)+"/codes/X/disable", nil)
	expect(t, "demoted owner's support token disables a code", res, body, http.StatusForbidden)

	// The list shows no secret; a viewer sees only its own tokens.
	res, body = adm.do("GET", "/tokens", nil)
	expect(t, "list tokens", res, body, http.StatusOK)
	if strings.Contains(string(body), op.Secret[len(console.TokenPrefix):]) || !strings.Contains(string(body), `"sue"`) {
		t.Errorf("token list (admin): %s", body)
	}
	res, body = e.bearer(st.Secret).do("GET", "/tokens", nil)
	if strings.Contains(string(body), op.ID) {
		t.Errorf("sue's token lists alice's tokens: %s", body)
	}
	res, body = e.bearer(st.Secret).do("POST", "/tokens/"+op.ID+"/revoke", nil)
	expect(t, "sue revokes alice's token", res, body, http.StatusNotFound)

	// Expiry: the clock passes the token's end.
	short := newToken(t, adm, "short", console.RoleViewer, time.Minute)
	res, body = e.bearer(short.Secret).do("GET", "/projects", nil)
	expect(t, "fresh token", res, body, http.StatusOK)
	e.clock.Add(2 * time.Minute)
	res, body = e.bearer(short.Secret).do("GET", "/projects", nil)
	expect(t, "expired token", res, body, http.StatusUnauthorized)

	// Revoked, and ended by a logout with it.
	res, body = adm.do("POST", "/tokens/"+op.ID+"/revoke", nil)
	expect(t, "revoke ci", res, body, http.StatusOK)
	res, body = ci.do("GET", "/projects", nil)
	expect(t, "revoked token", res, body, http.StatusUnauthorized)
	self := newToken(t, adm, "self", console.RoleAdmin, time.Hour)
	res, body = e.bearer(self.Secret).do("DELETE", "/session", nil)
	expect(t, "logout with a token", res, body, http.StatusNoContent)
	res, body = e.bearer(self.Secret).do("GET", "/me", nil)
	expect(t, "token after its logout", res, body, http.StatusUnauthorized)

	// The owner disabled: the token ends with the account.
	res, body = adm.do("POST", "/accounts/"+sueID+"/disable", nil)
	expect(t, "disable sue", res, body, http.StatusOK)
	res, body = e.bearer(st.Secret).do("GET", "/projects", nil)
	expect(t, "disabled owner's token", res, body, http.StatusUnauthorized)
	res, body = e.bearer("acv_"+strings.Repeat("A", 43)).do("GET", "/projects", nil)
	expect(t, "unknown token", res, body, http.StatusUnauthorized)
}
