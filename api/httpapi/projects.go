package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// getProject answers the project with its exact statistics.
func (s *Server) getProject(c *gin.Context) {
	if !s.admitRead(c) {
		return
	}
	ctx := c.Request.Context()
	key := keyOf(c)
	p, err := s.cfg.Records.Project(ctx, key.ProjectID)
	if err != nil {
		s.fail(c, "read project", err)
		return
	}
	st, err := s.cfg.Records.Statistics(ctx, key.ProjectID, s.cfg.Now().Unix())
	if err != nil {
		s.fail(c, "read statistics", err)
		return
	}
	p.Statistics = &st
	c.JSON(http.StatusOK, p)
}
