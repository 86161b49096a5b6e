package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/store"
	"github.com/gin-gonic/gin"
)

func keyOf(c *gin.Context) store.APIKey {
	v, _ := c.Get(ctxKey)
	k, _ := v.(store.APIKey)
	return k
}

// listCodes answers one page of the project's codes; the list may trail the hot path by the
// audit pipeline's lag.
func (s *Server) listCodes(c *gin.Context) {
	q, detail := parseListQuery(c)
	if detail != "" {
		abort(c, http.StatusBadRequest, detail)
		return
	}
	if !s.admitRead(c) {
		return
	}
	key := keyOf(c)
	now := s.cfg.Now().Unix()
	rows, total, err := s.cfg.Records.ListCodes(c.Request.Context(), key.ProjectID, q, now)
	if err != nil {
		s.fail(c, "list codes", err)
		return
	}
	page := contract.CodePage{Items: make([]contract.Code, 0, len(rows)), Total: total, Page: q.Page, PageSize: q.PageSize}
	page.TotalPages = (total + int64(q.PageSize) - 1) / int64(q.PageSize)
	for _, r := range rows {
		page.Items = append(page.Items, r.API(key.ProjectExpiresAt, now))
	}
	c.JSON(http.StatusOK, page)
}

func parseListQuery(c *gin.Context) (store.ListQuery, string) {
	q := store.ListQuery{Page: 1, PageSize: contract.DefaultPageSize}
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
	if v, ok := c.GetQuery("status"); ok {
		st, err := contract.ParseState(v)
		if err != nil {
			return q, "status must be one of unused, used, disabled, expired"
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

// getCodeByValue answers one code, looked up by its value, with its verification history.
func (s *Server) getCodeByValue(c *gin.Context) {
	value, err := pathValue(c, "code")
	if err != nil {
		abort(c, http.StatusBadRequest, "The code in the path must be percent-encoded")
		return
	}
	if err := contract.ValidateCode(value); err != nil {
		abort(c, http.StatusBadRequest, err.Error())
		return
	}
	if !s.admitRead(c) {
		return
	}
	key := keyOf(c)
	row, err := s.cfg.Records.CodeByValue(c.Request.Context(), key.ProjectID, value)
	s.answerCode(c, row, err)
}

// pathValue decodes a path parameter with path rules, where '+' is a plus sign. The router
// leaves parameters encoded (see New) because it would decode them with query rules.
func pathValue(c *gin.Context, name string) (string, error) {
	v, err := url.PathUnescape(c.Param(name))
	if err != nil {
		return "", fmt.Errorf("path parameter %s: %w", name, err)
	}
	return v, nil
}

// getCodeByID answers one code, looked up by its id, with its verification history.
func (s *Server) getCodeByID(c *gin.Context) {
	id, err := pathValue(c, "code_id")
	if err != nil || !contract.ValidID(id) {
		abort(c, http.StatusNotFound, "Code not found")
		return
	}
	if !s.admitRead(c) {
		return
	}
	key := keyOf(c)
	row, err := s.cfg.Records.CodeByID(c.Request.Context(), key.ProjectID, id)
	s.answerCode(c, row, err)
}

// answerCode renders a single code with its live state from Redis, so it reflects every
// acknowledged verify and reactivate at once, and its logs from Postgres.
func (s *Server) answerCode(c *gin.Context, row store.CodeRow, err error) {
	if errors.Is(err, store.ErrNotFound) {
		abort(c, http.StatusNotFound, "Code not found")
		return
	}
	if err != nil {
		s.fail(c, "read code", err)
		return
	}
	ctx := c.Request.Context()
	key := keyOf(c)
	if err := s.overlayLive(ctx, &row); err != nil {
		s.fail(c, "read live code state", err)
		return
	}
	code := row.API(key.ProjectExpiresAt, s.cfg.Now().Unix())
	logs, err := s.cfg.Records.Logs(ctx, row.ID, s.cfg.LogsLimit)
	if err != nil {
		s.fail(c, "read verification logs", err)
		return
	}
	code.VerificationLogs = logs
	if code.VerificationLogs == nil {
		code.VerificationLogs = []contract.LogEntry{}
	}
	c.JSON(http.StatusOK, codeWithLogs{Code: code, VerificationLogs: code.VerificationLogs})
}

// codeWithLogs always shows verification_logs, even empty, on the single-code endpoints.
type codeWithLogs struct {
	contract.Code
	VerificationLogs []contract.LogEntry `json:"verification_logs"`
}

// overlayLive replaces the row's state fields with Redis's, which is never older.
func (s *Server) overlayLive(ctx context.Context, row *store.CodeRow) error {
	st, found, err := s.cfg.HotPath.Code(ctx, row.ProjectID, row.Code)
	if errors.Is(err, cache.ErrNotCached) || (err == nil && !found) {
		return nil
	}
	if err != nil {
		return err
	}
	row.IsDisabled = st.Disabled
	row.VerifiedAt, row.VerifiedBy, row.VerifiedAtMs = nil, nil, st.VerifiedAtMs
	if st.VerifiedAtMs > 0 {
		sec := st.VerifiedAtMs / 1000
		row.VerifiedAt = &sec
		if st.VerifiedBy != "" {
			by := st.VerifiedBy
			row.VerifiedBy = &by
		}
	}
	return nil
}
