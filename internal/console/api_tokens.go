package console

import (
	"net/http"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// createToken makes a token for the caller's account. A browser or CLI login (a cookie
// session) may make one for itself, which is how acv login trades a password for a token; a
// request already holding a token needs the admin role to make another, so a token cannot
// outlive itself by minting its successor.
func (s *Server) createToken(c *gin.Context, se *Session) error {
	var b struct {
		Name      string `json:"name"`
		Role      Role   `json:"role"`
		ExpiresIn int64  `json:"expires_in"`
	}
	if err := s.bindJSON(c, &b); err != nil {
		return err
	}
	a := s.actor(c, se)
	if se.apiToken != nil {
		if err := a.require(RoleAdmin); err != nil {
			return err
		}
	}
	if b.ExpiresIn < 0 || b.ExpiresIn > int64(MaxTokenTTL/time.Second) {
		return contract.Errorf(contract.KindInvalid, "expires_in must be seconds from 60 to %d", int64(MaxTokenTTL/time.Second))
	}
	t, err := s.svc.CreateToken(c.Request.Context(), a, b.Name, b.Role, time.Duration(b.ExpiresIn)*time.Second)
	if err != nil {
		return err
	}
	c.JSON(http.StatusCreated, t)
	return nil
}

func (s *Server) listTokens(c *gin.Context, se *Session) error {
	ts, err := s.svc.Tokens(c.Request.Context(), s.actor(c, se))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"items": ts})
	return nil
}

func (s *Server) revokeToken(c *gin.Context, se *Session) error {
	t, err := s.svc.RevokeToken(c.Request.Context(), s.actor(c, se), c.Param("token_id"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, t)
	return nil
}

// rewrapKeys answers the counts of a rewrap; when some secret did not open, the counts still
// come, with the error's sentence in "error" (the others were done).
func (s *Server) rewrapKeys(c *gin.Context, se *Session) error {
	res, active, err := s.svc.RewrapKeys(c.Request.Context(), s.actor(c, se))
	body := gin.H{"active_master_key": active, "sealed": res.Sealed, "rewrapped": res.Rewrapped, "current": res.Current, "failed": res.Failed}
	if err != nil {
		if res.Failed == 0 {
			return err
		}
		body["error"] = err.Error()
	}
	c.JSON(http.StatusOK, body)
	return nil
}
