package console

import (
	"context"
	"net/http"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// LogPartitions lists verification_logs' day partitions (viewer and above).
func (s *Service) LogPartitions(ctx context.Context, a Actor) ([]contract.LogPartition, error) {
	if err := a.require(RoleViewer); err != nil {
		return nil, err
	}
	return s.store.LogPartitions(ctx)
}

// MaintainLogs runs one partition maintenance now (admin only), as the relay and consumer
// processes do hourly, with the service's policy; retentionDays and ahead, when not nil,
// replace its retention and its days ahead. A run that did something is recorded.
func (s *Service) MaintainLogs(ctx context.Context, a Actor, retentionDays, ahead *int) (contract.LogMaintenance, error) {
	if err := a.require(RoleAdmin); err != nil {
		return contract.LogMaintenance{}, err
	}
	p := s.cfg.LogPolicy
	if p == (contract.LogPolicy{}) {
		p = contract.DefaultLogPolicy()
	}
	if retentionDays != nil {
		p.RetentionDays = *retentionDays
	}
	if ahead != nil {
		p.Ahead = *ahead
	}
	res, err := s.store.MaintainLogPartitions(ctx, s.now(), p)
	if err != nil || res.Busy {
		return res, err
	}
	return res, s.record(ctx, a, "logs.maintain", "log_partitions", "", "", map[string]any{
		"retention_days": p.RetentionDays, "ahead": p.Ahead, "created": res.Created, "dropped": res.Dropped,
		"moved": res.Moved, "purged": res.Purged,
	})
}

func (s *Server) listLogPartitions(c *gin.Context, se *Session) error {
	ps, err := s.svc.LogPartitions(c.Request.Context(), s.actor(c, se))
	if err != nil {
		return err
	}
	type partition struct {
		Name    string `json:"name"`
		From    *int64 `json:"from"`
		To      *int64 `json:"to"`
		Default bool   `json:"default"`
	}
	items := make([]partition, 0, len(ps))
	for _, p := range ps {
		it := partition{Name: p.Name, Default: p.Default}
		if !p.Default {
			from, to := p.From.Unix(), p.To.Unix()
			it.From, it.To = &from, &to
		}
		items = append(items, it)
	}
	c.JSON(http.StatusOK, gin.H{"items": items})
	return nil
}

func (s *Server) maintainLogs(c *gin.Context, se *Session) error {
	var b struct {
		RetentionDays *int `json:"retention_days"`
		Ahead         *int `json:"ahead"`
	}
	if c.Request.ContentLength != 0 {
		if err := s.bindJSON(c, &b); err != nil {
			return err
		}
	}
	res, err := s.svc.MaintainLogs(c.Request.Context(), s.actor(c, se), b.RetentionDays, b.Ahead)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"busy": res.Busy, "created": nonNil(res.Created), "dropped": nonNil(res.Dropped),
		"moved": res.Moved, "purged": res.Purged})
	return nil
}

// nonNil is s, or an empty list for nil, so JSON shows [] rather than null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
