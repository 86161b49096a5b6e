package console

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// sessionBody answers a login, GET /me and a password change: who is logged in, the CSRF
// token every unsafe request must carry, and when the session ends at the latest.
type sessionBody struct {
	Account   Account `json:"account"`
	CSRFToken string  `json:"csrf_token"`
	ExpiresAt int64   `json:"expires_at"`
}

func sessionBodyOf(se *Session) sessionBody {
	return sessionBody{Account: accountOf(se.Account), CSRFToken: se.CSRFToken(), ExpiresAt: se.ExpiresAt.Unix()}
}

func (s *Server) login(c *gin.Context, _ *Session) error {
	var b struct {
		Username string `json:"username"`
		Password string `json:"password"`
	}
	if err := s.bindJSON(c, &b); err != nil {
		return err
	}
	se, token, err := s.svc.Login(c.Request.Context(), b.Username, b.Password, c.Request.UserAgent(), s.proxies.clientIP(c.Request))
	if err != nil {
		return err
	}
	s.setSessionCookie(c, token)
	c.JSON(http.StatusOK, sessionBodyOf(se))
	return nil
}

func (s *Server) logout(c *gin.Context, se *Session) error {
	if err := s.svc.Logout(c.Request.Context(), se, s.proxies.clientIP(c.Request)); err != nil {
		return err
	}
	s.clearSessionCookie(c)
	c.Status(http.StatusNoContent)
	return nil
}

func (s *Server) me(c *gin.Context, se *Session) error {
	c.JSON(http.StatusOK, sessionBodyOf(se))
	return nil
}

func (s *Server) changePassword(c *gin.Context, se *Session) error {
	var b struct {
		Current string `json:"current_password"`
		New     string `json:"new_password"`
	}
	if err := s.bindJSON(c, &b); err != nil {
		return err
	}
	nse, token, err := s.svc.ChangePassword(c.Request.Context(), se, b.Current, b.New, c.Request.UserAgent(), s.proxies.clientIP(c.Request))
	if err != nil {
		return err
	}
	s.setSessionCookie(c, token)
	c.JSON(http.StatusOK, sessionBodyOf(nse))
	return nil
}
