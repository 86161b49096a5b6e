package contract_test

import (
	"net/http"
	"testing"

	"github.com/acv/acv/api/contract"
)

// Every kind is answered with the status the contract names for it; anything else is a 500.
func TestKindHTTPStatus(t *testing.T) {
	for k, want := range map[contract.Kind]int{
		contract.KindInvalid: 400, contract.KindUnauthorized: 401, contract.KindForbidden: 403,
		contract.KindNotFound: 404, contract.KindMethodNotAllowed: 405, contract.KindConflict: 409,
		contract.KindTooLarge: 413, contract.KindRateLimited: 429, contract.KindUnavailable: 503,
		contract.KindInternal: 500, contract.Kind("something else"): 500,
	} {
		if got := k.HTTPStatus(); got != want {
			t.Errorf("%s: %d %s, want %d", k, got, http.StatusText(got), want)
		}
	}
}
