package console

import (
	"crypto/subtle"
	"mime"
	"net/http"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// CSRFHeader carries the session's CSRF token (Session.CSRFToken) on every unsafe request; a
// form posts it as the field CSRFField instead. The token comes with the login's answer and
// GET /me. The session cookie is SameSite=Strict already; the token is the second lock, for
// browsers or paths (a sibling subdomain) where that one does not hold.
const (
	CSRFHeader = "X-CSRF-Token"
	CSRFField  = "csrf_token"
)

var errCSRF = contract.Errorf(contract.KindForbidden, "Missing or invalid CSRF token: send the session's csrf_token in the X-CSRF-Token header")

// safeMethod tells whether a method changes nothing, so needs no CSRF token.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// checkCSRF refuses an unsafe request of session se without its CSRF token, comparing in
// constant time. A bearer-token request needs none: a browser never adds that header itself.
func checkCSRF(c *gin.Context, se *Session) error {
	if safeMethod(c.Request.Method) || se.apiToken != nil {
		return nil
	}
	got := c.GetHeader(CSRFHeader)
	if got == "" {
		if mt, _, _ := mime.ParseMediaType(c.ContentType()); mt == "application/x-www-form-urlencoded" || mt == "multipart/form-data" {
			got = c.PostForm(CSRFField)
		}
	}
	want := se.CSRFToken()
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return errCSRF
	}
	return nil
}
