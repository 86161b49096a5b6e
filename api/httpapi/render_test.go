package httpapi

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// The hand-written rendering must match encoding/json byte for byte, for every shape of
// result and for code values with characters that need escaping.
func TestRenderMatchesEncodingJSON(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	values := []string{"ABC", `q"uo\te`, "<a&b>", "tab\tnew\nline\r\x01\x1f", "ünï✓😀", "line\u2028sep\u2029", "bad\xffutf8", ""}
	for _, v := range values {
		for _, o := range []contract.Outcome{
			{Action: contract.ActionVerify, Code: v, CodeID: "01a2", VerifiedAt: 1_800_000_000_123, At: 1_800_000_000_123},
			{Action: contract.ActionVerify, Code: v, Error: contract.CodeNotFound},
			{Action: contract.ActionVerify, Code: v, CodeID: "01a2", Error: contract.CodeAlreadyUsed, VerifiedAt: 1_700_000_000_000},
			{Action: contract.ActionReactivate, Code: v, CodeID: "01a2", At: 1_800_000_000_999},
			{Action: contract.ActionReactivate, Code: v, CodeID: "01a2", Error: contract.CodeAlreadyUnused},
		} {
			var want []byte
			w := httptest.NewRecorder()
			c, _ := gin.CreateTestContext(w)
			if o.Action == contract.ActionVerify {
				want, _ = json.Marshal(o.VerifyResponse())
				renderVerify(c, o.VerifyResponse())
			} else {
				want, _ = json.Marshal(o.ReactivateResponse())
				renderReactivate(c, o.ReactivateResponse())
			}
			if got := w.Body.String(); got != string(want) {
				t.Errorf("rendered %s\nencoding/json %s", got, want)
			}
		}
	}
}
