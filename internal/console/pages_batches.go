package console

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/acv/acv/api/contract"
)

// bulkView is the bulk-disable page's data: the filter, the count it selects now, and the
// batch when the page revokes one.
type bulkView struct {
	Project contract.Project
	Filter  bulkFilter
	Count   int64
	Batch   *contract.Batch
	// Changed: the count confirmed was out of date; Count is the new one.
	Changed bool
}

func (s *Server) batchCancelSubmit(c *gin.Context, se *Session) error {
	pid := c.Param("project_id")
	if _, err := s.svc.CancelBatch(c.Request.Context(), s.actor(c, se), pid, c.Param("batch_id")); err != nil {
		return err
	}
	redirectDone(c, projectPath(pid)+"?tab=batches", "batch_cancelled", "")
	return nil
}

// bulkDisablePage shows how many codes a bulk disable (or a batch's revoke, with batch_id)
// would disable, and the button that confirms exactly that count.
func (s *Server) bulkDisablePage(c *gin.Context, se *Session) error {
	f := bulkFilter{BatchID: strings.TrimSpace(c.Query("batch_id")), Status: c.Query("status"),
		Search: strings.TrimSpace(c.Query("search"))}
	return s.renderBulk(c, se, f, false)
}

func (s *Server) renderBulk(c *gin.Context, se *Session, f bulkFilter, changed bool) error {
	ctx, a, pid := c.Request.Context(), s.actor(c, se), c.Param("project_id")
	p, err := s.svc.Project(ctx, a, pid)
	if err != nil {
		return err
	}
	cf, err := f.filter()
	if err != nil {
		return err
	}
	bv := bulkView{Project: p, Filter: f, Changed: changed}
	if f.BatchID != "" {
		b, err := s.svc.Batch(ctx, a, pid, f.BatchID)
		if err != nil {
			return err
		}
		bv.Batch = &b
	}
	if bv.Count, err = s.svc.BulkCount(ctx, a, pid, cf); err != nil {
		return err
	}
	title := "Disable codes in bulk"
	if bv.Batch != nil {
		title = "Revoke batch " + bv.Batch.Name
	}
	v := viewFor(se, title, "projects")
	if changed {
		v.Error = "The number of codes changed since it was shown: check the new count and confirm again."
	}
	v.Data = bv
	s.render(c, http.StatusOK, "bulkdisable", v)
	return nil
}

// formCount reads the confirmed count.
func formCount(c *gin.Context) (int64, error) {
	n, err := strconv.ParseInt(trimForm(c, "expected_count"), 10, 64)
	if err != nil || n < 0 {
		return 0, contract.Errorf(contract.KindInvalid, "The confirmed count is missing: count the codes first")
	}
	return n, nil
}

func (s *Server) bulkDisableSubmit(c *gin.Context, se *Session) error {
	pid := c.Param("project_id")
	f := bulkFilter{BatchID: trimForm(c, "batch_id"), Status: trimForm(c, "status"), Search: trimForm(c, "search")}
	if err := s.confirmProjectName(c, se, pid); err != nil {
		return err
	}
	want, err := formCount(c)
	if err != nil {
		return err
	}
	cf, err := f.filter()
	if err != nil {
		return err
	}
	n, err := s.svc.BulkDisable(c.Request.Context(), s.actor(c, se), pid, cf, want)
	if errors.Is(err, contract.ErrCountChanged) {
		return s.renderBulk(c, se, f, true)
	}
	if err != nil {
		return err
	}
	redirectDone(c, projectPath(pid)+"?tab=codes", "bulk_disabled", strconv.Itoa(n))
	return nil
}

func (s *Server) batchRevokeSubmit(c *gin.Context, se *Session) error {
	pid, bid := c.Param("project_id"), c.Param("batch_id")
	if err := s.confirmProjectName(c, se, pid); err != nil {
		return err
	}
	want, err := formCount(c)
	if err != nil {
		return err
	}
	n, err := s.svc.RevokeBatch(c.Request.Context(), s.actor(c, se), pid, bid, &want)
	if errors.Is(err, contract.ErrCountChanged) {
		return s.renderBulk(c, se, bulkFilter{BatchID: bid}, true)
	}
	if err != nil {
		return err
	}
	redirectDone(c, projectPath(pid)+"?tab=batches", "batch_revoked", strconv.Itoa(n))
	return nil
}
