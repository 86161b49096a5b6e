package contract_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
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

// A lost connection is told from the outside: a refused dial, a reset, a cut stream; a refusal
// of the server's own, or a plain error, is not one.
func TestConnectionLost(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	_, dialErr := net.Dial("tcp", l.Addr().String())
	for _, c := range []struct {
		err  error
		want bool
	}{
		{dialErr, true},
		{fmt.Errorf("read reply: %w", syscall.ECONNRESET), true},
		{fmt.Errorf("read reply: %w", io.ErrUnexpectedEOF), true},
		{net.ErrClosed, true},
		{errors.New("ERR unknown command"), false},
		{contract.ErrConflict, false},
	} {
		if got := contract.ConnectionLost(c.err); got != c.want {
			t.Errorf("ConnectionLost(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
