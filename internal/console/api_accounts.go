package console

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

func (s *Server) listAccounts(c *gin.Context, se *Session) error {
	as, err := s.svc.Accounts(c.Request.Context(), s.actor(c, se))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"items": as})
	return nil
}

func (s *Server) createAccount(c *gin.Context, se *Session) error {
	var b struct {
		Username string `json:"username"`
		Role     Role   `json:"role"`
	}
	if err := s.bindJSON(c, &b); err != nil {
		return err
	}
	acc, err := s.svc.CreateAccount(c.Request.Context(), s.actor(c, se), b.Username, b.Role)
	if err != nil {
		return err
	}
	c.JSON(http.StatusCreated, acc)
	return nil
}

func (s *Server) setAccountDisabled(c *gin.Context, se *Session, disabled bool) error {
	id := c.Param("admin_id")
	if err := s.svc.SetAccountDisabled(c.Request.Context(), s.actor(c, se), id, disabled); err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"id": id, "disabled": disabled})
	return nil
}

func (s *Server) disableAccount(c *gin.Context, se *Session) error {
	return s.setAccountDisabled(c, se, true)
}

func (s *Server) enableAccount(c *gin.Context, se *Session) error {
	return s.setAccountDisabled(c, se, false)
}

func (s *Server) setAccountRole(c *gin.Context, se *Session) error {
	var b struct {
		Role Role `json:"role"`
	}
	if err := s.bindJSON(c, &b); err != nil {
		return err
	}
	id := c.Param("admin_id")
	if err := s.svc.SetAccountRole(c.Request.Context(), s.actor(c, se), id, b.Role); err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"id": id, "role": b.Role})
	return nil
}

// resetPassword draws a one-time password, or sets the body's password when it has one.
func (s *Server) resetPassword(c *gin.Context, se *Session) error {
	var b struct {
		Password string `json:"password"`
	}
	if c.Request.ContentLength != 0 {
		if err := s.bindJSON(c, &b); err != nil {
			return err
		}
	}
	acc, err := s.svc.ResetPassword(c.Request.Context(), s.actor(c, se), c.Param("admin_id"), b.Password)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, acc)
	return nil
}
