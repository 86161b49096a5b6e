package console

import (
	"context"
	"errors"
	"net/http"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// listCodes answers a page of a project's codes. With a cursor parameter (empty for the first
// page) it pages by keyset and answers next_cursor; without, by page number as the client API
// does.
func (s *Server) listCodes(c *gin.Context, se *Session) error {
	var (
		q   contract.ListQuery
		err error
	)
	if v := c.Query("status"); v != "" {
		if q.State, err = contract.ParseState(v); err != nil {
			return contract.Errorf(contract.KindInvalid, "Query parameter status must be unused, used, disabled or expired")
		}
	}
	q.Search = c.Query("search")
	if err := contract.ValidateText("search", q.Search, contract.MaxCodeLen); err != nil {
		return contract.Errorf(contract.KindInvalid, "%s", capitalize(err.Error()))
	}
	if q.PageSize, err = queryInt(c, "page_size", contract.DefaultPageSize); err != nil {
		return err
	}
	if cursor, keyset := c.GetQuery("cursor"); keyset {
		if q.PageSize < 1 || q.PageSize > contract.MaxPageSize {
			return contract.Errorf(contract.KindInvalid, "page_size must be 1 to %d", contract.MaxPageSize)
		}
		page, err := s.svc.ListCodesAfter(c.Request.Context(), s.actor(c, se), c.Param("project_id"),
			contract.CursorQuery{State: q.State, Search: q.Search, Cursor: cursor, PageSize: q.PageSize})
		if err != nil {
			return err
		}
		c.JSON(http.StatusOK, page)
		return nil
	}
	if q.Page, err = queryInt(c, "page", 1); err != nil {
		return err
	}
	if q.Page < 1 || q.PageSize < 1 || q.PageSize > contract.MaxPageSize {
		return contract.Errorf(contract.KindInvalid, "page must be at least 1 and page_size 1 to %d", contract.MaxPageSize)
	}
	page, err := s.svc.ListCodes(c.Request.Context(), s.actor(c, se), c.Param("project_id"), q)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, page)
	return nil
}

func (s *Server) getCode(c *gin.Context, se *Session) error {
	value, err := pathValue(c, "code")
	if err != nil {
		return err
	}
	code, err := s.svc.Code(c.Request.Context(), s.actor(c, se), c.Param("project_id"), value)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, code)
	return nil
}

func (s *Server) setCodeDisabled(c *gin.Context, se *Session, disabled bool) error {
	value, err := pathValue(c, "code")
	if err != nil {
		return err
	}
	if err := s.svc.SetCodeDisabled(c.Request.Context(), s.actor(c, se), c.Param("project_id"), value, disabled); err != nil {
		return err
	}
	return s.getCode(c, se)
}

func (s *Server) disableCode(c *gin.Context, se *Session) error {
	return s.setCodeDisabled(c, se, true)
}
func (s *Server) enableCode(c *gin.Context, se *Session) error {
	return s.setCodeDisabled(c, se, false)
}

// manualBody is a manual verify or reactivate: the reason is required.
type manualBody struct {
	Reason string `json:"reason"`
}

func (s *Server) manualVerify(c *gin.Context, se *Session) error {
	return s.manual(c, se, s.svc.ManualVerify)
}

func (s *Server) manualReactivate(c *gin.Context, se *Session) error {
	return s.manual(c, se, s.svc.ManualReactivate)
}

func (s *Server) manual(c *gin.Context, se *Session,
	run func(ctx context.Context, a Actor, projectID, value, reason string) (ManualResult, error)) error {
	value, err := pathValue(c, "code")
	if err != nil {
		return err
	}
	var b manualBody
	if err := s.bindJSON(c, &b); err != nil {
		return err
	}
	res, err := run(c.Request.Context(), s.actor(c, se), c.Param("project_id"), value, b.Reason)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, res)
	return nil
}

// importCodes reads a CSV body. ?dry_run=true checks every row and writes nothing; otherwise
// the good rows are imported. Either way the answer is the report, with the problem rows.
func (s *Server) importCodes(c *gin.Context, se *Session) error {
	dry, err := queryBool(c, "dry_run")
	if err != nil {
		return err
	}
	body := http.MaxBytesReader(c.Writer, c.Request.Body, s.cfg.MaxImportBytes)
	rep, err := s.svc.Import(c.Request.Context(), s.actor(c, se), c.Param("project_id"), body, dry)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		if dry {
			return contract.Errorf(contract.KindTooLarge, "The CSV must be at most %d bytes", s.cfg.MaxImportBytes)
		}
		return contract.Errorf(contract.KindTooLarge, "The CSV must be at most %d bytes; codes imported before the limit: %d", s.cfg.MaxImportBytes, rep.Inserted)
	}
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, rep)
	return nil
}

// queryBool reads an optional boolean query parameter: true, false, 1 or 0; absent is false.
func queryBool(c *gin.Context, name string) (bool, error) {
	switch c.Query(name) {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	}
	return false, contract.Errorf(contract.KindInvalid, "Query parameter %s must be true or false", name)
}

// export streams every code of the project as CSV. What can refuse it is checked before the
// first byte, so a refusal is a status; a failure once streaming is a truncated file (the
// connection is cut, so a client does not take it for whole) and an error in the log.
func (s *Server) export(c *gin.Context, se *Session) error {
	ctx, a, pid := c.Request.Context(), s.actor(c, se), c.Param("project_id")
	if err := s.svc.ExportReady(ctx, a, pid); err != nil {
		return err
	}
	c.Header("Content-Type", "text/csv; charset=utf-8")
	c.Header("Content-Disposition", `attachment; filename="codes-`+pid+`.csv"`)
	c.Status(http.StatusOK)
	n, err := s.svc.Export(ctx, a, pid, c.Writer)
	if err != nil {
		if !c.Writer.Written() {
			c.Writer.Header().Del("Content-Type")
			c.Writer.Header().Del("Content-Disposition")
			return err
		}
		s.log.ErrorContext(ctx, "console: export cut short", "project", pid, "codes_written", n, "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}
