package console

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/acv/acv/api/contract"
)

// generate starts a generation batch and answers 202 with it; its progress is at
// .../batches/:batch_id.
func (s *Server) generate(c *gin.Context, se *Session) error {
	var b struct {
		Name      string `json:"name"`
		Count     int    `json:"count"`
		Length    int    `json:"length"`
		Charset   string `json:"charset"`
		Prefix    string `json:"prefix"`
		Suffix    string `json:"suffix"`
		ExpiresAt *int64 `json:"expires_at"`
	}
	if err := s.bindJSON(c, &b); err != nil {
		return err
	}
	if b.Length == 0 {
		b.Length = 12
	}
	pid := c.Param("project_id")
	batch, err := s.svc.StartGenerate(c.Request.Context(), s.actor(c, se), pid, b.Name, contract.GenerateSpec{
		Count: b.Count, Length: b.Length, Charset: b.Charset, Prefix: b.Prefix, Suffix: b.Suffix, ExpiresAt: b.ExpiresAt,
	})
	if err != nil {
		return err
	}
	c.Header("Location", APIPrefix+"/projects/"+pid+"/batches/"+batch.ID)
	c.JSON(http.StatusAccepted, batch)
	return nil
}

// capitalizeInvalid starts a refusal's message with a capital, as the API's details do.
func (s *Server) listBatches(c *gin.Context, se *Session) error {
	bs, err := s.svc.Batches(c.Request.Context(), s.actor(c, se), c.Param("project_id"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"items": bs})
	return nil
}

func (s *Server) getBatch(c *gin.Context, se *Session) error {
	b, err := s.svc.Batch(c.Request.Context(), s.actor(c, se), c.Param("project_id"), c.Param("batch_id"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, b)
	return nil
}

func (s *Server) cancelBatch(c *gin.Context, se *Session) error {
	b, err := s.svc.CancelBatch(c.Request.Context(), s.actor(c, se), c.Param("project_id"), c.Param("batch_id"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, b)
	return nil
}

// revokeBatch disables every code of a batch; an optional expected_count makes it refuse
// (409, with the new count) when the count shown is out of date.
func (s *Server) revokeBatch(c *gin.Context, se *Session) error {
	var b struct {
		ExpectedCount *int64 `json:"expected_count"`
	}
	if c.Request.ContentLength != 0 {
		if err := s.bindJSON(c, &b); err != nil {
			return err
		}
	}
	n, err := s.svc.RevokeBatch(c.Request.Context(), s.actor(c, se), c.Param("project_id"), c.Param("batch_id"), b.ExpectedCount)
	if errors.Is(err, contract.ErrCountChanged) {
		return s.answerChanged(c, se, contract.CodeFilter{BatchID: c.Param("batch_id")}, err)
	}
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"disabled": n})
	return nil
}

// bulkFilter reads a bulk disable's filter from the query (the count) or a JSON body (the
// disable).
type bulkFilter struct {
	BatchID string `json:"batch_id" form:"batch_id"`
	Status  string `json:"status" form:"status"`
	Search  string `json:"search" form:"search"`
}

func (f bulkFilter) filter() (contract.CodeFilter, error) {
	out := contract.CodeFilter{BatchID: f.BatchID, Search: f.Search}
	if f.Status != "" {
		st, err := contract.ParseState(f.Status)
		if err != nil {
			return out, contract.Errorf(contract.KindInvalid, "Status must be unused, used or expired")
		}
		out.State = st
	}
	return out, nil
}

// bulkCount answers how many codes a bulk disable with the query's filter would disable, with
// the filter echoed: the body to confirm with expected_count.
func (s *Server) bulkCount(c *gin.Context, se *Session) error {
	q := bulkFilter{BatchID: c.Query("batch_id"), Status: c.Query("status"), Search: c.Query("search")}
	f, err := q.filter()
	if err != nil {
		return err
	}
	n, err := s.svc.BulkCount(c.Request.Context(), s.actor(c, se), c.Param("project_id"), f)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"count": n, "filter": q})
	return nil
}

// bulkDisable disables the codes the body's filter selects when expected_count is still
// their count; else 409 with the new count.
func (s *Server) bulkDisable(c *gin.Context, se *Session) error {
	var b struct {
		bulkFilter
		ExpectedCount *int64 `json:"expected_count"`
	}
	if err := s.bindJSON(c, &b); err != nil {
		return err
	}
	if b.ExpectedCount == nil {
		return contract.Errorf(contract.KindInvalid, "Field expected_count is required: read the count first (GET .../bulk-disable)")
	}
	f, err := b.filter()
	if err != nil {
		return err
	}
	n, err := s.svc.BulkDisable(c.Request.Context(), s.actor(c, se), c.Param("project_id"), f, *b.ExpectedCount)
	if errors.Is(err, contract.ErrCountChanged) {
		return s.answerChanged(c, se, f, err)
	}
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"disabled": n})
	return nil
}

// answerChanged answers a stale count (contract.ErrCountChanged) 409 with the count of the
// codes filter f selects now beside the detail: the count to confirm again.
func (s *Server) answerChanged(c *gin.Context, se *Session, f contract.CodeFilter, changed error) error {
	n, err := s.svc.BulkCount(c.Request.Context(), s.actor(c, se), c.Param("project_id"), f)
	if err != nil {
		return err
	}
	status, detail, _ := s.refusal(c, changed)
	c.AbortWithStatusJSON(status, gin.H{"detail": detail, "count": n})
	return nil
}
