package httpapi

import (
	"fmt"
	"net/http"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// getProject answers the project with its exact statistics.
func (s *Server) getProject(c *gin.Context) error {
	if err := s.admitRead(c); err != nil {
		return err
	}
	ctx := c.Request.Context()
	key := keyOf(c)
	p, err := s.cfg.Records.Project(ctx, key.ProjectID)
	if err != nil {
		return fmt.Errorf("read project: %w", err)
	}
	st, err := s.cfg.Records.Statistics(ctx, key.ProjectID, s.now().Unix())
	if err != nil {
		return fmt.Errorf("read statistics: %w", err)
	}
	p.Statistics = &st
	c.JSON(http.StatusOK, p)
	return nil
}

// getStatistics answers the statistics endpoint: the project's derived-state counts (the same
// as in the project body), its usage rate and the codes most recently used.
func (s *Server) getStatistics(c *gin.Context) error {
	if err := s.admitRead(c); err != nil {
		return err
	}
	ctx := c.Request.Context()
	pid := keyOf(c).ProjectID
	st, recent, err := s.cfg.Records.ProjectStatistics(ctx, pid, s.now().Unix(), contract.RecentVerificationsLimit)
	if err != nil {
		return fmt.Errorf("read statistics: %w", err)
	}
	c.JSON(http.StatusOK, contract.NewProjectStatistics(pid, st, recent))
	return nil
}
