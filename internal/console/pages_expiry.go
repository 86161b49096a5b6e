package console

import (
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// dateTimeLocal is the value format of an <input type="datetime-local">, read as UTC.
const dateTimeLocal = "2006-01-02T15:04"

// expirySubmit sets a project's expiry from the project page's date-time field (UTC). Every
// code without an expiry of its own stops verifying at that moment, so the form asks for a
// confirmation box to be ticked, checked here too.
func (s *Server) expirySubmit(c *gin.Context, se *Session) error {
	id := c.Param("project_id")
	v := trimForm(c, "expires_at")
	if v == "" {
		return contract.Errorf(contract.KindInvalid, "Give the date and time the project expires (UTC)")
	}
	t, err := time.Parse(dateTimeLocal, v)
	if err != nil {
		if t, err = time.Parse(dateTimeLocal+":05", v); err != nil {
			return contract.Errorf(contract.KindInvalid, "The expiry must be a date and time (YYYY-MM-DDTHH:MM, UTC)")
		}
	}
	u := t.Unix()
	if u < 0 || u > maxUnix {
		return contract.Errorf(contract.KindInvalid, "The expiry is out of range")
	}
	if c.PostForm("confirm") != "yes" {
		return contract.Errorf(contract.KindInvalid, "Tick the confirmation box: codes without their own expiry stop verifying at the project's")
	}
	if err := s.svc.SetProjectExpiry(c.Request.Context(), s.actor(c, se), id, &u); err != nil {
		return err
	}
	redirectDone(c, projectPath(id)+"?tab=settings", "expiry_set", "")
	return nil
}

// expiryClearSubmit removes a project's expiry; its codes without an expiry of their own then
// never expire. It asks for the same confirmation.
func (s *Server) expiryClearSubmit(c *gin.Context, se *Session) error {
	id := c.Param("project_id")
	if c.PostForm("confirm") != "yes" {
		return contract.Errorf(contract.KindInvalid, "Tick the confirmation box to clear the project's expiry")
	}
	if err := s.svc.SetProjectExpiry(c.Request.Context(), s.actor(c, se), id, nil); err != nil {
		return err
	}
	redirectDone(c, projectPath(id)+"?tab=settings", "expiry_cleared", "")
	return nil
}
