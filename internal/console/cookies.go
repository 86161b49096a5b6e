package console

import (
	"net/http"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// CookieName is the session cookie: the session token, HttpOnly (no script reads it),
// SameSite=Strict (no other site's page sends it), Secure when the browser came over HTTPS.
// It has no Max-Age: it ends with the browser, and the server ends the session in any case.
const CookieName = "acv_console_session"

// errMustChange refuses a session whose account has not yet replaced its one-time password.
var errMustChange = contract.Errorf(contract.KindForbidden,
	"Change your password first: POST "+APIPrefix+"/me/password with current_password and new_password")

// setSessionCookie sends token as the session cookie.
func (s *Server) setSessionCookie(c *gin.Context, token string) {
	http.SetCookie(c.Writer, &http.Cookie{
		Name: CookieName, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: s.proxies.secure(c.Request),
	})
}

// clearSessionCookie tells the browser to forget the cookie.
func (s *Server) clearSessionCookie(c *gin.Context) {
	http.SetCookie(c.Writer, &http.Cookie{
		Name: CookieName, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: s.proxies.secure(c.Request), MaxAge: -1, Expires: time.Unix(1, 0),
	})
}

// session is the request's valid session, or errNoSession.
func (s *Server) session(c *gin.Context) (*Session, error) {
	if bearer, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer "); ok {
		return s.svc.SessionByAPIToken(c.Request.Context(), strings.TrimSpace(bearer))
	}
	ck, err := c.Request.Cookie(CookieName)
	if err != nil || ck.Value == "" {
		return nil, errNoSession
	}
	return s.svc.SessionByToken(c.Request.Context(), ck.Value)
}

// actor is the session's account acting from the request's client address.
func (s *Server) actor(c *gin.Context, se *Session) Actor {
	return se.Actor(s.proxies.clientIP(c.Request))
}
