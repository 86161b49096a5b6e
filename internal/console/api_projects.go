package console

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/acv/acv/api/contract"
)

func (s *Server) listProjects(c *gin.Context, se *Session) error {
	ps, err := s.svc.Projects(c.Request.Context(), s.actor(c, se))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"items": ps})
	return nil
}

func (s *Server) createProject(c *gin.Context, se *Session) error {
	var b struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		ExpiresAt   *int64 `json:"expires_at"`
	}
	if err := s.bindJSON(c, &b); err != nil {
		return err
	}
	if b.Name == "" {
		return contract.Errorf(contract.KindInvalid, "Field name is required")
	}
	if err := contract.ValidateText("name", b.Name, 200); err != nil {
		return contract.Errorf(contract.KindInvalid, "%s", capitalize(err.Error()))
	}
	if err := contract.ValidateText("description", b.Description, 2000); err != nil {
		return contract.Errorf(contract.KindInvalid, "%s", capitalize(err.Error()))
	}
	if b.ExpiresAt != nil && (*b.ExpiresAt < 0 || *b.ExpiresAt > maxUnix) {
		return contract.Errorf(contract.KindInvalid, "expires_at must be Unix seconds between 0 and %d", int64(maxUnix))
	}
	p, err := s.svc.CreateProject(c.Request.Context(), s.actor(c, se), contract.NewProject{Name: b.Name, Description: b.Description, ExpiresAt: b.ExpiresAt})
	if err != nil {
		return err
	}
	c.JSON(http.StatusCreated, p)
	return nil
}

func (s *Server) getProject(c *gin.Context, se *Session) error {
	p, err := s.svc.Project(c.Request.Context(), s.actor(c, se), c.Param("project_id"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, p)
	return nil
}

func (s *Server) getStatistics(c *gin.Context, se *Session) error {
	st, err := s.svc.Statistics(c.Request.Context(), s.actor(c, se), c.Param("project_id"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, st)
	return nil
}

func (s *Server) setEnabled(c *gin.Context, se *Session, enabled bool) error {
	id := c.Param("project_id")
	if err := s.svc.SetProjectEnabled(c.Request.Context(), s.actor(c, se), id, enabled); err != nil {
		return err
	}
	return s.getProject(c, se)
}

func (s *Server) enableProject(c *gin.Context, se *Session) error  { return s.setEnabled(c, se, true) }
func (s *Server) disableProject(c *gin.Context, se *Session) error { return s.setEnabled(c, se, false) }

func (s *Server) setExpiry(c *gin.Context, se *Session) error {
	var b struct {
		ExpiresAt *int64 `json:"expires_at"`
	}
	if err := s.bindJSON(c, &b); err != nil {
		return err
	}
	if b.ExpiresAt == nil {
		return contract.Errorf(contract.KindInvalid, "Field expires_at is required (Unix seconds); DELETE the expiry to clear it")
	}
	if err := s.svc.SetProjectExpiry(c.Request.Context(), s.actor(c, se), c.Param("project_id"), b.ExpiresAt); err != nil {
		return err
	}
	return s.getProject(c, se)
}

func (s *Server) clearExpiry(c *gin.Context, se *Session) error {
	if err := s.svc.SetProjectExpiry(c.Request.Context(), s.actor(c, se), c.Param("project_id"), nil); err != nil {
		return err
	}
	return s.getProject(c, se)
}

func (s *Server) listKeys(c *gin.Context, se *Session) error {
	ks, err := s.svc.APIKeys(c.Request.Context(), s.actor(c, se), c.Param("project_id"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"items": ks})
	return nil
}

// limitBody is a key's token bucket; 0 leaves a limit unset.
type limitBody struct {
	RatePerSec float64 `json:"rate_per_sec"`
	Burst      int     `json:"burst"`
}

func (s *Server) createKey(c *gin.Context, se *Session) error {
	var b limitBody
	if err := s.bindJSON(c, &b); err != nil {
		return err
	}
	k, err := s.svc.CreateAPIKey(c.Request.Context(), s.actor(c, se), c.Param("project_id"), b.RatePerSec, b.Burst)
	if err != nil {
		return err
	}
	// The one time the secret is shown.
	c.JSON(http.StatusCreated, gin.H{"key_id": k.ID, "project_id": k.ProjectID, "secret": k.Secret,
		"rate_per_sec": k.RatePerSec, "burst": k.Burst})
	return nil
}

func (s *Server) revokeKey(c *gin.Context, se *Session) error {
	id := c.Param("key_id")
	if err := s.svc.RevokeAPIKey(c.Request.Context(), s.actor(c, se), id); err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"key_id": id, "revoked": true})
	return nil
}

func (s *Server) limitKey(c *gin.Context, se *Session) error {
	var b limitBody
	if err := s.bindJSON(c, &b); err != nil {
		return err
	}
	id := c.Param("key_id")
	if err := s.svc.SetAPIKeyRateLimit(c.Request.Context(), s.actor(c, se), id, b.RatePerSec, b.Burst); err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"key_id": id, "rate_per_sec": b.RatePerSec, "burst": b.Burst})
	return nil
}
