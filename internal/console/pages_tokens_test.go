package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/acv/acv/internal/console"
)

// TestConsoleTokensPage: an operator creates a token on the page (offered no role above their
// own), sees it once, and revokes it; the token then calls the API until it is revoked.
func TestConsoleTokensPage(t *testing.T) {
	e := newEnv(t, nil)
	op := e.pageLogin("otto", console.RoleOperator)
	res, body := op.page("GET", "/tokens", nil)
	op.want("tokens page", res, body, http.StatusOK, "")
	if strings.Contains(body, `<option value="admin"`) || !strings.Contains(body, `<option value="operator" selected`) {
		t.Errorf("roles offered: %.4000s", body)
	}
	res, body = op.page("POST", "/tokens", url.Values{"csrf_token": {csrf(t, body)}, "name": {"ci"}, "role": {"viewer"}, "days": {"7"}})
	op.want("create", res, body, http.StatusOK, "")
	m := regexp.MustCompile(`value="(` + console.TokenPrefix + `[A-Za-z0-9_-]{43})"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no token shown: %.4000s", body)
	}
	api := e.bearer(m[1])
	res2, b2 := api.do("GET", "/projects", nil)
	expect(t, "the page's token", res2, b2, http.StatusOK)
	res, body = op.page("GET", "/tokens", nil)
	if strings.Contains(body, m[1]) {
		t.Error("the token is shown again")
	}
	id := regexp.MustCompile(`action="/tokens/([0-9a-f]{32})/revoke"`).FindStringSubmatch(body)
	if id == nil {
		t.Fatalf("no revoke form: %.4000s", body)
	}
	res, body = op.page("POST", "/tokens/"+id[1]+"/revoke", url.Values{"csrf_token": {csrf(t, body)}})
	op.want("revoke", res, body, http.StatusSeeOther, "/tokens?done=token_revoked")
	res2, b2 = api.do("GET", "/projects", nil)
	expect(t, "a revoked token", res2, b2, http.StatusUnauthorized)
}
