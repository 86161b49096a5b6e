package console

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/acv/acv/api/contract"
)

// auditItem is an audit row as the API shows it: the time in Unix seconds, the hashes in hex.
type auditItem struct {
	contract.AuditRecord
	At       int64  `json:"at"`
	PrevHash string `json:"prev_hash"`
	Hash     string `json:"hash"`
}

// auditFilterQuery reads an audit search from the query string: admin, action, target_kind,
// target_id, project_id, since, until, before, limit.
func auditFilterQuery(c *gin.Context) (contract.AuditFilter, error) {
	f := contract.AuditFilter{
		AdminUsername: c.Query("admin"), Action: c.Query("action"), TargetKind: c.Query("target_kind"),
		TargetID: c.Query("target_id"), ProjectID: c.Query("project_id"),
	}
	var err error
	if f.Since, err = queryTime(c, "since"); err != nil {
		return f, err
	}
	if f.Until, err = queryTime(c, "until"); err != nil {
		return f, err
	}
	before, err := queryInt(c, "before", 0)
	if err != nil {
		return f, err
	}
	f.BeforeSeq = int64(before)
	if f.Limit, err = queryInt(c, "limit", 100); err != nil {
		return f, err
	}
	if f.Limit < 1 || f.Limit > 1000 {
		return f, contract.Errorf(contract.KindInvalid, "limit must be 1 to 1000")
	}
	return f, nil
}

func (s *Server) listAudit(c *gin.Context, se *Session) error {
	f, err := auditFilterQuery(c)
	if err != nil {
		return err
	}
	rows, err := s.svc.AuditLog(c.Request.Context(), s.actor(c, se), f)
	if err != nil {
		return err
	}
	items := make([]auditItem, 0, len(rows))
	for _, r := range rows {
		items = append(items, auditItem{AuditRecord: r, At: r.At.Unix(), PrevHash: hexOf(r.PrevHash), Hash: hexOf(r.Hash)})
	}
	body := gin.H{"items": items}
	// Keyset paging: the next page is the rows before the last one shown.
	if len(rows) == f.Limit {
		body["next_before"] = rows[len(rows)-1].Seq
	}
	c.JSON(http.StatusOK, body)
	return nil
}

func (s *Server) verifyAudit(c *gin.Context, se *Session) error {
	if err := s.actor(c, se).require(RoleViewer); err != nil {
		return err
	}
	rep, err := s.svc.VerifyChain(c.Request.Context())
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, rep)
	return nil
}

func (s *Server) pruneAudit(c *gin.Context, se *Session) error {
	var b struct {
		KeepDays int `json:"keep_days"`
	}
	if err := s.bindJSON(c, &b); err != nil {
		return err
	}
	if b.KeepDays < 1 {
		return contract.Errorf(contract.KindInvalid, "keep_days must be at least 1")
	}
	n, err := s.svc.PruneAudit(c.Request.Context(), s.actor(c, se), dayDuration(b.KeepDays))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"deleted": n})
	return nil
}
