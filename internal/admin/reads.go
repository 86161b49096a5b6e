package admin

import (
	"context"
	"errors"

	"github.com/acv/acv/api/contract"
)

// notFound replaces a not-found error of the stores with one that names what is missing, in
// words ("project X not found"), never the database driver's text.
func notFound(err error, kind, id string) error {
	if err == nil || !errors.Is(err, contract.ErrNotFound) {
		return err
	}
	var named *contract.Error
	if errors.As(err, &named) && named != contract.ErrNotFound {
		return named
	}
	return contract.NotFound("%s %s not found", kind, id)
}

// Projects lists every project, oldest first, without statistics.
func (a *Admin) Projects(ctx context.Context) ([]contract.Project, error) {
	ps, err := a.Store.Projects(ctx)
	if ps == nil && err == nil {
		ps = []contract.Project{}
	}
	return ps, err
}

// Project reads one project with its statistics at now (Unix seconds).
func (a *Admin) Project(ctx context.Context, id string, now int64) (contract.Project, error) {
	p, err := a.Store.Project(ctx, id)
	if err != nil {
		return p, notFound(err, "project", id)
	}
	st, err := a.Store.Statistics(ctx, id, now)
	if err != nil {
		return p, notFound(err, "project", id)
	}
	p.Statistics = &st
	return p, nil
}

// Statistics reads a project's statistics as the API's statistics endpoint answers them: the
// counts by derived state at now (Unix seconds), the usage rate and the codes most recently
// used, newest first. Like every list it reads PostgreSQL, so it may trail the hot path by the
// audit pipeline's lag.
func (a *Admin) Statistics(ctx context.Context, projectID string, now int64) (contract.ProjectStatistics, error) {
	st, recent, err := a.Store.ProjectStatistics(ctx, projectID, now, contract.RecentVerificationsLimit)
	if err != nil {
		return contract.ProjectStatistics{}, notFound(err, "project", projectID)
	}
	return contract.NewProjectStatistics(projectID, st, recent), nil
}

// APIKeys lists a project's API keys without their secrets.
func (a *Admin) APIKeys(ctx context.Context, projectID string) ([]contract.KeyInfo, error) {
	ks, err := a.Store.ProjectAPIKeys(ctx, projectID)
	if ks == nil && err == nil {
		ks = []contract.KeyInfo{}
	}
	return ks, notFound(err, "project", projectID)
}

// ListCodes reads one page of a project's codes as PostgreSQL records them (it may trail the
// hot path by the audit pipeline's lag).
func (a *Admin) ListCodes(ctx context.Context, projectID string, q contract.ListQuery, now int64) (contract.CodePage, error) {
	if q.Page < 1 {
		q.Page = 1
	}
	if q.PageSize < 1 {
		q.PageSize = contract.DefaultPageSize
	}
	if q.PageSize > contract.MaxPageSize {
		return contract.CodePage{}, contract.Errorf(contract.KindInvalid, "page size must be 1 to %d", contract.MaxPageSize)
	}
	p, err := a.Store.Project(ctx, projectID)
	if err != nil {
		return contract.CodePage{}, notFound(err, "project", projectID)
	}
	rows, total, err := a.Store.ListCodes(ctx, projectID, q, now)
	if err != nil {
		return contract.CodePage{}, notFound(err, "project", projectID)
	}
	page := contract.CodePage{Items: make([]contract.Code, 0, len(rows)), Total: total, Page: q.Page, PageSize: q.PageSize}
	page.TotalPages = (total + int64(q.PageSize) - 1) / int64(q.PageSize)
	for _, r := range rows {
		page.Items = append(page.Items, r.Resource(p.ExpiresAt, now))
	}
	return page, nil
}

// HistoryLimit is how many verification-log entries Code shows.
const HistoryLimit = 100

// Code reads one code by its value with its live state (Redis, when it holds the code) and its
// verification history (newest first, at most HistoryLimit entries).
func (a *Admin) Code(ctx context.Context, projectID, value string, now int64) (contract.CodeWithHistory, error) {
	p, err := a.Store.Project(ctx, projectID)
	if err != nil {
		return contract.CodeWithHistory{}, notFound(err, "project", projectID)
	}
	rec, err := a.Store.CodeByValue(ctx, projectID, value)
	if err != nil {
		if errors.Is(err, contract.ErrNotFound) {
			return contract.CodeWithHistory{}, contract.NotFound("code %q not found in project %s", value, projectID)
		}
		return contract.CodeWithHistory{}, err
	}
	if live, found, err := a.Cache.LiveCode(ctx, projectID, value); err == nil && found {
		rec = rec.WithLiveState(live)
	}
	c := contract.CodeWithHistory{Code: rec.Resource(p.ExpiresAt, now)}
	c.State = contract.DeriveState(c.IsDisabled, c.VerifiedAt != nil, contract.EffectiveExpiry(c.ExpiresAt, p.ExpiresAt), now)
	logs, err := a.Store.Logs(ctx, rec.ID, HistoryLimit)
	if err != nil {
		return c, err
	}
	if logs == nil {
		logs = []contract.LogEntry{}
	}
	c.VerificationLogs = logs
	return c, nil
}
