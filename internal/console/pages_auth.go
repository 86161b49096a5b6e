package console

import (
	"net/http"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

func (s *Server) loginPage(c *gin.Context, _ *Session) error {
	if _, err := s.session(c); err == nil {
		c.Redirect(http.StatusSeeOther, "/")
		return nil
	}
	s.render(c, http.StatusOK, "login", viewFor(nil, "Log in", ""))
	return nil
}

// loginSubmit logs in from the form. A refused login shows the form again with the refusal
// (the same words for every wrong username or password, the wait when locked).
func (s *Server) loginSubmit(c *gin.Context, _ *Session) error {
	username := trimForm(c, "username")
	se, token, err := s.svc.Login(c.Request.Context(), username, c.PostForm("password"), c.Request.UserAgent(),
		s.proxies.clientIP(c.Request))
	if err != nil {
		if !refused(err) {
			return err
		}
		status, detail, wait := s.refusal(c, err)
		if wait > 0 {
			c.Header("Retry-After", itoa(wait))
		}
		v := viewFor(nil, "Log in", "")
		v.Error, v.Data = detail, map[string]string{"Username": username}
		s.render(c, status, "login", v)
		return nil
	}
	s.setSessionCookie(c, token)
	if se.Account.MustChangePassword {
		c.Redirect(http.StatusSeeOther, "/password")
		return nil
	}
	c.Redirect(http.StatusSeeOther, "/")
	return nil
}

func (s *Server) logoutSubmit(c *gin.Context, se *Session) error {
	if err := s.svc.Logout(c.Request.Context(), se, s.proxies.clientIP(c.Request)); err != nil {
		return err
	}
	s.clearSessionCookie(c)
	c.Redirect(http.StatusSeeOther, "/login")
	return nil
}

func (s *Server) passwordPage(c *gin.Context, se *Session) error {
	s.render(c, http.StatusOK, "password", viewFor(se, "Change password", ""))
	return nil
}

// passwordSubmit changes the password; a refusal (wrong current password, a weak new one)
// shows the form again with it.
func (s *Server) passwordSubmit(c *gin.Context, se *Session) error {
	next := c.PostForm("new_password")
	var err error
	if next != c.PostForm("confirm_password") {
		err = contract.Errorf(contract.KindInvalid, "The new password and its confirmation differ")
	}
	var token string
	if err == nil {
		_, token, err = s.svc.ChangePassword(c.Request.Context(), se, c.PostForm("current_password"), next,
			c.Request.UserAgent(), s.proxies.clientIP(c.Request))
	}
	if err != nil {
		if !refused(err) {
			return err
		}
		status, detail, _ := s.refusal(c, err)
		v := viewFor(se, "Change password", "")
		v.Error = detail
		s.render(c, status, "password", v)
		return nil
	}
	s.setSessionCookie(c, token)
	redirectDone(c, "/", "password", "")
	return nil
}
