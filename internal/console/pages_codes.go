package console

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// codePage shows one code (?value=…): its state, its verification history and, for support
// and above, its actions.
func (s *Server) codePage(c *gin.Context, se *Session) error {
	ctx, a, pid := c.Request.Context(), s.actor(c, se), c.Param("project_id")
	p, err := s.svc.Project(ctx, a, pid)
	if err != nil {
		return err
	}
	code, err := s.svc.Code(ctx, a, pid, c.Query("value"))
	if err != nil {
		return err
	}
	v := viewFor(se, "Code "+code.Code.Code, "projects")
	v.Flash = flash(c)
	v.Data = map[string]any{"Project": p, "Code": code}
	s.render(c, http.StatusOK, "code", v)
	return nil
}

func (s *Server) codeDisabledSubmit(disabled bool) func(*gin.Context, *Session) error {
	return func(c *gin.Context, se *Session) error {
		pid, value := c.Param("project_id"), c.PostForm("value")
		if err := s.svc.SetCodeDisabled(c.Request.Context(), s.actor(c, se), pid, value, disabled); err != nil {
			return err
		}
		done := "code_enabled"
		if disabled {
			done = "code_disabled"
		}
		redirectDone(c, codePath(pid, value), done, "")
		return nil
	}
}

// manualSubmit verifies (verify true) or reactivates a code by hand with the form's reason. A
// refusal of the hot path (already used, disabled…) is an outcome, shown on the code page.
func (s *Server) manualSubmit(verify bool) func(*gin.Context, *Session) error {
	return func(c *gin.Context, se *Session) error {
		pid, value := c.Param("project_id"), c.PostForm("value")
		run, done := s.svc.ManualReactivate, "reactivate"
		if verify {
			run, done = s.svc.ManualVerify, "verify"
		}
		res, err := run(c.Request.Context(), s.actor(c, se), pid, value, trimForm(c, "reason"))
		if err != nil {
			return err
		}
		if res.Success {
			redirectDone(c, codePath(pid, value), done+"_ok", "")
		} else {
			redirectDone(c, codePath(pid, value), done+"_failed", res.ErrorCode)
		}
		return nil
	}
}
