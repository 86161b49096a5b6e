package console

import (
	"net/http"
	"strconv"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// The API tokens page: a person makes a token for the acv command or a script (with at most
// their own role), sees its secret once, and revokes the tokens they may see.

func (s *Server) tokensPage(c *gin.Context, se *Session) error {
	return s.renderTokens(c, se, nil)
}

// renderTokens shows the tokens the session may see; shown, when set, is a token just created,
// whose secret is displayed this once.
func (s *Server) renderTokens(c *gin.Context, se *Session, shown *NewToken) error {
	ts, err := s.svc.Tokens(c.Request.Context(), s.actor(c, se))
	if err != nil {
		return err
	}
	v := viewFor(se, "API tokens", "tokens")
	v.Flash = flash(c)
	v.Data = map[string]any{"Tokens": ts, "Shown": shown, "Now": time.Now().Unix()}
	s.render(c, http.StatusOK, "tokens", v)
	return nil
}

func (s *Server) tokenCreateSubmit(c *gin.Context, se *Session) error {
	maxDays := int(MaxTokenTTL / (24 * time.Hour))
	days, err := strconv.Atoi(trimForm(c, "days"))
	if err != nil || days < 1 || days > maxDays {
		return contract.Errorf(contract.KindInvalid, "Expires after must be 1 to %d days", maxDays)
	}
	t, err := s.svc.CreateToken(c.Request.Context(), s.actor(c, se), trimForm(c, "name"), Role(c.PostForm("role")),
		time.Duration(days)*24*time.Hour)
	if err != nil {
		return err
	}
	return s.renderTokens(c, se, &t)
}

func (s *Server) tokenRevokeSubmit(c *gin.Context, se *Session) error {
	if _, err := s.svc.RevokeToken(c.Request.Context(), s.actor(c, se), c.Param("token_id")); err != nil {
		return err
	}
	redirectDone(c, "/tokens", "token_revoked", "")
	return nil
}
