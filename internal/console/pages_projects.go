package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/acv/acv/api/contract"
)

func itoa(n int) string { return strconv.Itoa(n) }

// projectTotals is one project's row on the dashboard.
type projectTotals struct {
	Project contract.Project
	Stats   contract.ProjectStatistics
}

func (s *Server) dashboardPage(c *gin.Context, se *Session) error {
	ctx, a := c.Request.Context(), s.actor(c, se)
	ps, err := s.svc.Projects(ctx, a)
	if err != nil {
		return err
	}
	rows := make([]projectTotals, 0, len(ps))
	var sum contract.Statistics
	for _, p := range ps {
		st, err := s.svc.Statistics(ctx, a, p.ID)
		if err != nil {
			return err
		}
		rows = append(rows, projectTotals{Project: p, Stats: st})
		sum.TotalCodes += st.TotalCodes
		sum.UsedCodes += st.UsedCodes
		sum.UnusedCodes += st.UnusedCodes
		sum.DisabledCodes += st.DisabledCodes
		sum.ExpiredCodes += st.ExpiredCodes
	}
	health, err := s.svc.Health(ctx, a)
	if err != nil {
		return err
	}
	v := viewFor(se, "Dashboard", "dashboard")
	v.Flash = flash(c)
	chart, err := s.chartFor(c, se, "", rangeLink("/", c.Request.URL.Query()))
	if err != nil {
		return err
	}
	v.Data = map[string]any{"Rows": rows, "Sum": sum, "Usage": contract.UsageRate(sum), "Chart": chart, "Health": health}
	s.render(c, http.StatusOK, "dashboard", v)
	return nil
}

func (s *Server) projectsPage(c *gin.Context, se *Session) error {
	ps, err := s.svc.Projects(c.Request.Context(), s.actor(c, se))
	if err != nil {
		return err
	}
	v := viewFor(se, "Projects", "projects")
	v.Flash = flash(c)
	v.Data = map[string]any{"Projects": ps}
	s.render(c, http.StatusOK, "projects", v)
	return nil
}

// formExpiry reads an optional date field (YYYY-MM-DD, the end of that day in UTC) as Unix
// seconds.
func formExpiry(c *gin.Context, name string) (*int64, error) {
	v := trimForm(c, name)
	if v == "" {
		return nil, nil
	}
	d, err := time.Parse("2006-01-02", v)
	if err != nil {
		return nil, contract.Errorf(contract.KindInvalid, "The expiry date must be a date (YYYY-MM-DD)")
	}
	u := d.Add(24*time.Hour - time.Second).Unix()
	if u < 0 || u > maxUnix {
		return nil, contract.Errorf(contract.KindInvalid, "The expiry date is out of range")
	}
	return &u, nil
}

func (s *Server) projectCreateSubmit(c *gin.Context, se *Session) error {
	name, desc := trimForm(c, "name"), trimForm(c, "description")
	if name == "" {
		return contract.Errorf(contract.KindInvalid, "A project needs a name")
	}
	if err := contract.ValidateText("name", name, 200); err != nil {
		return contract.Errorf(contract.KindInvalid, "%s", capitalize(err.Error()))
	}
	if err := contract.ValidateText("description", desc, 2000); err != nil {
		return contract.Errorf(contract.KindInvalid, "%s", capitalize(err.Error()))
	}
	exp, err := formExpiry(c, "expires_on")
	if err != nil {
		return err
	}
	p, err := s.svc.CreateProject(c.Request.Context(), s.actor(c, se), contract.NewProject{Name: name, Description: desc, ExpiresAt: exp})
	if err != nil {
		return err
	}
	redirectDone(c, projectPath(p.ID), "project_created", "")
	return nil
}

// projectView is the project page's data.
type projectView struct {
	Project contract.Project
	Stats   contract.ProjectStatistics
	Keys    []contract.KeyInfo
	// Codes is the codes table's page, read by keyset; Cursor the one it was read from ("" for
	// the first page).
	Codes  contract.CursorPage
	Cursor string
	// Status and Search are the codes table's filter, kept across pages.
	Status, Search string
	States         []contract.State
	// NewKey is a key just created: its secret is shown this once.
	NewKey *contract.APIKey
	// Import is the report of an import or dry run just made, shown with its problem rows.
	Import *contract.ImportReport
	// ExpiresInput is the project's expiry as the date-time field shows it (UTC).
	ExpiresInput string
	// Batches are the project's latest generation batches; Running tells whether one of them
	// is still queued or running.
	Batches []contract.Batch
	Running bool
	// Tab is the tab shown (projectTabs); Chart the overview's verify chart, whose totals the
	// key numbers show on every tab.
	Tab   string
	Tabs  []projectTab
	Pager pager
	Chart activityChart
}

// projectExtra is what a form's answer shows on the project page besides its usual content.
type projectExtra struct {
	NewKey *contract.APIKey
	Import *contract.ImportReport
}

func (s *Server) projectPage(c *gin.Context, se *Session) error {
	return s.renderProject(c, se, projectExtra{})
}

// renderProject writes the project page. A GET reads the codes table's filters and cursor
// from the query; a form's answer (extra set) shows the table's first page.
func (s *Server) renderProject(c *gin.Context, se *Session, extra projectExtra) error {
	ctx, a, id := c.Request.Context(), s.actor(c, se), c.Param("project_id")
	p, err := s.svc.Project(ctx, a, id)
	if err != nil {
		return err
	}
	st, err := s.svc.Statistics(ctx, a, id)
	if err != nil {
		return err
	}
	keys, err := s.svc.APIKeys(ctx, a, id)
	if err != nil {
		return err
	}
	batches, err := s.svc.Batches(ctx, a, id)
	if err != nil {
		return err
	}
	pv := projectView{Project: p, Stats: st, Keys: keys, NewKey: extra.NewKey, Import: extra.Import, Batches: batches,
		States: []contract.State{contract.StateUnused, contract.StateUsed, contract.StateDisabled, contract.StateExpired},
		Tab:    projectTabOf(c, extra), Tabs: projectTabs}
	if pv.Chart, err = s.chartFor(c, se, id, projectPath(id)+"?tab=overview&"); err != nil {
		return err
	}
	for _, b := range batches {
		pv.Running = pv.Running || !b.Final()
	}
	if p.ExpiresAt != nil {
		pv.ExpiresInput = time.Unix(*p.ExpiresAt, 0).UTC().Format(dateTimeLocal)
	}
	q := contract.CursorQuery{PageSize: 50}
	if c.Request.Method == http.MethodGet {
		if v := c.Query("status"); v != "" {
			if q.State, err = contract.ParseState(v); err != nil {
				return contract.Errorf(contract.KindInvalid, "The status filter must be unused, used, disabled or expired")
			}
		}
		q.Search = strings.TrimSpace(c.Query("search"))
		if err := contract.ValidateText("search", q.Search, contract.MaxCodeLen); err != nil {
			return contract.Errorf(contract.KindInvalid, "%s", capitalize(err.Error()))
		}
		q.Cursor = c.Query("cursor")
	}
	if pv.Codes, err = s.svc.ListCodesAfter(ctx, a, id, q); err != nil {
		return err
	}
	pv.Status, pv.Search, pv.Cursor = string(q.State), q.Search, q.Cursor
	pv.Pager = keysetPager(c, url.Values{"tab": {"codes"}, "search": {q.Search}, "status": {pv.Status}}, projectPath(id),
		"cursor", pv.Codes.NextCursor, len(pv.Codes.Items), q.PageSize, pv.Codes.Total)
	v := viewFor(se, p.Name, "projects")
	v.Flash = flash(c)
	v.Data = pv
	s.render(c, http.StatusOK, "project", v)
	return nil
}

func (s *Server) projectEnabledSubmit(enabled bool) func(*gin.Context, *Session) error {
	return func(c *gin.Context, se *Session) error {
		id := c.Param("project_id")
		if !enabled {
			if err := s.confirmProjectName(c, se, id); err != nil {
				return err
			}
		}
		if err := s.svc.SetProjectEnabled(c.Request.Context(), s.actor(c, se), id, enabled); err != nil {
			return err
		}
		done := "project_disabled"
		if enabled {
			done = "project_enabled"
		}
		redirectDone(c, projectPath(id), done, "")
		return nil
	}
}

// formInt reads an integer form field, def when empty.
func formInt(c *gin.Context, name string, def int) (int, error) {
	v := trimForm(c, name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, contract.Errorf(contract.KindInvalid, "%s must be a whole number", name)
	}
	return n, nil
}

func (s *Server) generateSubmit(c *gin.Context, se *Session) error {
	id := c.Param("project_id")
	count, err := formInt(c, "count", 0)
	if err != nil {
		return err
	}
	length, err := formInt(c, "length", 12)
	if err != nil {
		return err
	}
	exp, err := formExpiry(c, "expires_on")
	if err != nil {
		return err
	}
	if _, err := s.svc.StartGenerate(c.Request.Context(), s.actor(c, se), id, trimForm(c, "name"), contract.GenerateSpec{
		Count: count, Length: length, Charset: trimForm(c, "charset"), Prefix: trimForm(c, "prefix"),
		Suffix: trimForm(c, "suffix"), ExpiresAt: exp,
	}); err != nil {
		return err
	}
	redirectDone(c, projectPath(id)+"?tab=batches", "generate_started", "")
	return nil
}

// keyCreateSubmit issues a key and shows the project page with its secret, this once: the
// answer is the page itself, not a redirect, so the secret is in no URL and no later page.
func (s *Server) keyCreateSubmit(c *gin.Context, se *Session) error {
	rate, err := strconv.ParseFloat(strings.TrimSpace(c.DefaultPostForm("rate_per_sec", "0")), 64)
	if err != nil {
		return contract.Errorf(contract.KindInvalid, "The rate must be a number")
	}
	burst, err := formInt(c, "burst", 0)
	if err != nil {
		return err
	}
	k, err := s.svc.CreateAPIKey(c.Request.Context(), s.actor(c, se), c.Param("project_id"), rate, burst)
	if err != nil {
		return err
	}
	return s.renderProject(c, se, projectExtra{NewKey: &k})
}

func (s *Server) keyRevokeSubmit(c *gin.Context, se *Session) error {
	pid, kid := c.Param("project_id"), c.Param("key_id")
	if err := s.svc.RevokeAPIKey(c.Request.Context(), s.actor(c, se), kid); err != nil {
		return err
	}
	redirectDone(c, projectPath(pid)+"?tab=keys", "key_revoked", "")
	return nil
}
