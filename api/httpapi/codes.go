package httpapi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

func keyOf(c *gin.Context) contract.APIKey {
	v, _ := c.Get(ctxKey)
	k, _ := v.(contract.APIKey)
	return k
}

// listCodes answers one page of the project's codes; the list may trail the hot path by the
// audit pipeline's lag.
func (s *Server) listCodes(c *gin.Context) error {
	q, detail := parseListQuery(c)
	if detail != "" {
		return invalid(detail)
	}
	if err := s.admitRead(c); err != nil {
		return err
	}
	key := keyOf(c)
	now := s.now().Unix()
	rows, total, err := s.cfg.Records.ListCodes(c.Request.Context(), key.ProjectID, addressable(q), now)
	if err != nil {
		return fmt.Errorf("list codes: %w", err)
	}
	page := contract.CodePage{Items: make([]contract.Code, 0, len(rows)), Total: total, Page: q.Page, PageSize: q.PageSize}
	page.TotalPages = (total + int64(q.PageSize) - 1) / int64(q.PageSize)
	for _, r := range rows {
		page.Items = append(page.Items, r.Resource(key.ProjectExpiresAt, now))
	}
	c.JSON(http.StatusOK, page)
	return nil
}

// addressable caps a page whose offset, (page-1) × page_size, would overflow an int64 (the
// database refused the negative offset: a 500). Both are past the end of any project, so the
// store answers the same empty page with the right total.
func addressable(q contract.ListQuery) contract.ListQuery {
	if deepest := math.MaxInt64 / int64(q.PageSize); int64(q.Page) > deepest {
		q.Page = int(deepest)
	}
	return q
}

func parseListQuery(c *gin.Context) (contract.ListQuery, string) {
	q := contract.ListQuery{Page: 1, PageSize: contract.DefaultPageSize}
	if v, ok := c.GetQuery("page"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return q, "page must be an integer of at least 1"
		}
		q.Page = n
	}
	if v, ok := c.GetQuery("page_size"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > contract.MaxPageSize {
			return q, "page_size must be an integer from 1 to 100"
		}
		q.PageSize = n
	}
	// "all" and an empty value mean no filter, as the original SDK passes the caller's string.
	if v := c.Query("status"); v != "" && v != "all" {
		st, err := contract.ParseState(v)
		if err != nil {
			return q, "status must be one of unused, used, disabled, expired or all"
		}
		q.State = st
	}
	if v := c.Query("search"); v != "" {
		if err := contract.ValidateText("search", v, contract.MaxCodeLen); err != nil {
			return q, err.Error()
		}
		q.Search = v
	}
	return q, ""
}

func (s *Server) getCodeByValue(c *gin.Context) error {
	value, err := pathValue(c, "code")
	if err != nil {
		return invalid("The code in the path must be percent-encoded")
	}
	if err := contract.ValidateCode(value); err != nil {
		return invalid(err.Error())
	}
	return s.answerCode(c, s.cfg.Records.CodeByValue, value)
}

// pathValue decodes a path parameter with path rules, where '+' is a plus sign (the router
// would decode it with query rules).
func pathValue(c *gin.Context, name string) (string, error) {
	v, err := url.PathUnescape(c.Param(name))
	if err != nil {
		return "", fmt.Errorf("path parameter %s: %w", name, err)
	}
	return v, nil
}

func (s *Server) getCodeByID(c *gin.Context) error {
	id, err := pathValue(c, "code_id")
	if err != nil || !contract.ValidID(id) {
		return errCodeNotFound
	}
	return s.answerCode(c, s.cfg.Records.CodeByID, id)
}

var errCodeNotFound = &contract.Error{Kind: contract.KindNotFound, Message: "Code not found"}

// answerCode admits a validated read of one code, then renders the code read names (by value
// or id) with its live state from Redis, so it reflects every acknowledged verify at once, and
// its logs from Postgres.
func (s *Server) answerCode(c *gin.Context, read func(ctx context.Context, projectID, name string) (contract.CodeRecord, error), name string) error {
	if err := s.admitRead(c); err != nil {
		return err
	}
	ctx := c.Request.Context()
	rec, err := read(ctx, keyOf(c).ProjectID, name)
	if errors.Is(err, contract.ErrNotFound) {
		return errCodeNotFound
	}
	if err != nil {
		return fmt.Errorf("read code: %w", err)
	}
	live, found, err := s.cfg.HotPath.LiveCode(ctx, rec.ProjectID, rec.Code)
	if err != nil {
		return fmt.Errorf("read live code state: %w", err)
	}
	if found {
		rec = rec.WithLiveState(live)
	}
	code := rec.Resource(keyOf(c).ProjectExpiresAt, s.now().Unix())
	logs, err := s.cfg.Records.Logs(ctx, rec.ID, s.cfg.LogsLimit)
	if err != nil {
		return fmt.Errorf("read verification logs: %w", err)
	}
	if logs == nil {
		logs = []contract.LogEntry{}
	}
	c.JSON(http.StatusOK, codeWithLogs{Code: code, VerificationLogs: logs})
	return nil
}

// codeWithLogs always shows verification_logs, even empty, on the single-code endpoints.
type codeWithLogs struct {
	contract.Code
	VerificationLogs []contract.LogEntry `json:"verification_logs"`
}

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
