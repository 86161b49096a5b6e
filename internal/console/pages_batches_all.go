package console

import (
	"net/http"
	"sort"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// projectBatch is a batch with the project it belongs to, for the batches page.
type projectBatch struct {
	Project contract.Project
	Batch   contract.Batch
}

// batchesPage lists the latest generation batches of every project, newest first: what an
// operator checks after starting generations in several projects.
func (s *Server) batchesPage(c *gin.Context, se *Session) error {
	ctx, a := c.Request.Context(), s.actor(c, se)
	ps, err := s.svc.Projects(ctx, a)
	if err != nil {
		return err
	}
	var rows []projectBatch
	for _, p := range ps {
		bs, err := s.svc.Batches(ctx, a, p.ID)
		if err != nil {
			return err
		}
		for _, b := range bs {
			rows = append(rows, projectBatch{Project: p, Batch: b})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Batch.CreatedAt > rows[j].Batch.CreatedAt })
	v := viewFor(se, "Generation batches", "batches")
	v.Data = map[string]any{"Rows": rows}
	s.render(c, http.StatusOK, "batches", v)
	return nil
}
