package console

import (
	"strings"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// errWrongName refuses a destructive action whose typed confirmation is not the project's name.
var errWrongName = contract.Errorf(contract.KindInvalid,
	"The name typed does not match the project's name: nothing was changed")

// confirmProjectName refuses a destructive action on project pid (disabling it, revoking a
// batch, disabling codes in bulk) unless the form's confirm_name is the project's name as
// typed by the operator: a click alone never stops codes from verifying.
func (s *Server) confirmProjectName(c *gin.Context, se *Session, pid string) error {
	p, err := s.svc.Project(c.Request.Context(), s.actor(c, se), pid)
	if err != nil {
		return err
	}
	if strings.TrimSpace(c.PostForm("confirm_name")) != p.Name {
		return errWrongName
	}
	return nil
}
