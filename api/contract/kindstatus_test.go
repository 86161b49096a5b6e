package contract_test

import (
	"net/http"
	"testing"

	"github.com/acv/acv/api/contract"
)

// Every kind is answered with the status the contract names for it; anything else is a 500.
func TestKindHTTPStatus(t *testing.T) {
	want := map[contract.Kind]int{
		contract.KindInvalid: 400, contract.KindUnauthorized: 401, contract.KindForbidden: 403,
		contract.KindNotFound: 404, contract.KindMethodNotAllowed: 405, contract.KindConflict: 409,
		contract.KindTooLarge: 413, contract.KindRateLimited: 429, contract.KindUnavailable: 503,
		contract.KindInternal: 500, contract.KindUnsupportedMediaType: 415, contract.Kind("something else"): 500,
	}
	for k, status := range want {
		if got := k.HTTPStatus(); got != status {
			t.Errorf("%s: %d %s, want %d", k, got, http.StatusText(got), status)
		}
	}
	for _, k := range contract.Kinds {
		if _, ok := want[k]; !ok {
			t.Errorf("kind %s has no status in this test", k)
		}
	}
	if len(contract.Kinds) != len(want)-1 {
		t.Errorf("contract.Kinds lists %d kinds, the table %d", len(contract.Kinds), len(want)-1)
	}
}
