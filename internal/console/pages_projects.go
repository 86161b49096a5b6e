package console

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/acv/acv/api/contract"
)

type projectTotals struct {
	Project contract.Project
	Stats   contract.ProjectStatistics
}

func (s *Server) dashboardPage(c *gin.Context, se *Session) error {
	ctx := c.Request.Context()
	ps, err := s.ops.Projects(ctx)
	if err != nil {
		return err
	}
	rows := make([]projectTotals, 0, len(ps))
	var sum contract.Statistics
	for _, p := range ps {
		st, err := s.ops.Statistics(ctx, p.ID, s.now())
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
	health := s.svc.Health(ctx)
	chart, err := s.chartFor(c, se, "", rangeLink("/", c.Request.URL.Query()))
	if err != nil {
		return err
	}
	return s.page(c, se, "dashboard", "Dashboard", "dashboard",
		map[string]any{"Rows": rows, "Sum": sum, "Usage": contract.UsageRate(sum), "Chart": chart, "Health": health})
}

func (s *Server) projectsPage(c *gin.Context, se *Session) error {
	ps, err := s.ops.Projects(c.Request.Context())
	if err != nil {
		return err
	}
	return s.page(c, se, "projects", "Projects", "projects", map[string]any{"Projects": ps})
}

// formExpiry reads an optional date (YYYY-MM-DD) as the end of that day, UTC, in Unix seconds.
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
	exp, err := formExpiry(c, "expires_on")
	if err != nil {
		return err
	}
	p, err := s.svc.CreateProject(c.Request.Context(), s.actor(c, se), contract.NewProject{Name: name, Description: desc, ExpiresAt: exp})
	return redirectDone(c, err, projectPath(p.ID), "project_created", "")
}

type projectView struct {
	Project contract.Project
	Stats   contract.ProjectStatistics
	Keys    []contract.KeyInfo
	// Codes is the codes table's keyset page, read from Cursor with the filter Status, Search.
	Codes                  contract.CursorPage
	Cursor, Status, Search string
	States                 []contract.State
	projectExtra
	ExpiresInput string // the expiry as the date-time field shows it
	Batches      []contract.Batch
	Running      bool // a batch is still queued or running
	Tab          string
	Tabs         []struct{ Key, Label string }
	Pager        pager
	Chart        activityChart
}

// projectExtra is what a form's answer shows on the project page besides its usual content.
type projectExtra struct {
	NewKey *contract.APIKey       // just created: its secret is shown this once
	Import *contract.ImportReport // an import or dry run just made
}

func (s *Server) projectPage(c *gin.Context, se *Session) error {
	return s.renderProject(c, se, projectExtra{})
}

func (s *Server) renderProject(c *gin.Context, se *Session, extra projectExtra) error {
	ctx, id := c.Request.Context(), c.Param("project_id")
	p, err := s.ops.Project(ctx, id, s.now())
	if err != nil {
		return err
	}
	st, err := s.ops.Statistics(ctx, id, s.now())
	if err != nil {
		return err
	}
	keys, err := s.ops.APIKeys(ctx, id)
	if err != nil {
		return err
	}
	batches, err := s.ops.Batches(ctx, id, batchesShown)
	if err != nil {
		return err
	}
	pv := projectView{Project: p, Stats: st, Keys: keys, projectExtra: extra, Batches: batches,
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
			return invalid(err)
		}
		q.Cursor = c.Query("cursor")
	}
	if pv.Codes, err = s.ops.ListCodesAfter(ctx, id, q, s.now()); err != nil {
		return err
	}
	pv.Status, pv.Search, pv.Cursor = string(q.State), q.Search, q.Cursor
	pv.Pager = keysetPager(c, url.Values{"tab": {"codes"}, "search": {q.Search}, "status": {pv.Status}}, projectPath(id),
		"cursor", pv.Codes.NextCursor, len(pv.Codes.Items), q.PageSize, pv.Codes.Total)
	return s.page(c, se, "project", p.Name, "projects", pv)
}

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
	_, err = s.svc.StartGenerate(c.Request.Context(), s.actor(c, se), id, trimForm(c, "name"), contract.GenerateSpec{
		Count: count, Length: length, Charset: trimForm(c, "charset"), Prefix: trimForm(c, "prefix"),
		Suffix: trimForm(c, "suffix"), ExpiresAt: exp,
	})
	return redirectDone(c, err, projectPath(id)+"?tab=batches", "generate_started", "")
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
	return redirectDone(c, s.svc.RevokeAPIKey(c.Request.Context(), s.actor(c, se), kid), projectPath(pid)+"?tab=keys", "key_revoked", "")
}

// projectTabs are the project page's tabs, each a URL of its own (?tab=), the overview first.
var projectTabs = []struct{ Key, Label string }{
	{"overview", "Overview"}, {"codes", "Codes"}, {"keys", "API keys"}, {"batches", "Batches"}, {"settings", "Settings"},
}

// projectTabOf is the tab a form's answer belongs to, else ?tab=, else the overview.
func projectTabOf(c *gin.Context, extra projectExtra) string {
	switch {
	case extra.NewKey != nil:
		return "keys"
	case extra.Import != nil:
		return "codes"
	}
	t := c.Query("tab")
	for _, pt := range projectTabs {
		if pt.Key == t {
			return t
		}
	}
	return "overview"
}

func (s *Server) codePage(c *gin.Context, se *Session) error {
	ctx, pid := c.Request.Context(), c.Param("project_id")
	p, err := s.ops.Project(ctx, pid, s.now())
	if err != nil {
		return err
	}
	code, err := s.ops.Code(ctx, pid, c.Query("value"), s.now())
	if err != nil {
		return err
	}
	return s.page(c, se, "code", "Code "+code.Code.Code, "projects", map[string]any{"Project": p, "Code": code})
}

func (s *Server) codeDisabledSubmit(disabled bool) func(*gin.Context, *Session) error {
	return func(c *gin.Context, se *Session) error {
		pid, value := c.Param("project_id"), c.PostForm("value")
		return redirectDone(c, s.svc.SetCodeDisabled(c.Request.Context(), s.actor(c, se), pid, value, disabled), codePath(pid, value), pick(disabled, "code_disabled", "code_enabled"), "")
	}
}

// manualSubmit verifies or reactivates a code by hand; a refusal is an outcome shown.
func (s *Server) manualSubmit(action contract.Action) func(*gin.Context, *Session) error {
	return func(c *gin.Context, se *Session) error {
		pid, value := c.Param("project_id"), c.PostForm("value")
		res, err := s.svc.manual(c.Request.Context(), s.actor(c, se), action, pid, value, trimForm(c, "reason"))
		return redirectDone(c, err, codePath(pid, value), string(action)+pick(res.Success, "_ok", "_failed"), res.ErrorCode)
	}
}

// expirySubmit sets a project's expiry from the project page's date-time field (UTC). Every
// code without an expiry of its own stops verifying at that moment, so the form asks for a
// confirmation box to be ticked, checked here too.
func (s *Server) expirySubmit(c *gin.Context, se *Session) error {
	id := c.Param("project_id")
	v := trimForm(c, "expires_at")
	if v == "" {
		return contract.Errorf(contract.KindInvalid, "Give the date and time the project expires (UTC)")
	}
	t, err := parseDateTimeLocal(v)
	if err != nil {
		return contract.Errorf(contract.KindInvalid, "The expiry must be a date and time (YYYY-MM-DDTHH:MM, UTC)")
	}
	u := t.Unix()
	if u < 0 || u > maxUnix {
		return contract.Errorf(contract.KindInvalid, "The expiry is out of range")
	}
	if c.PostForm("confirm") != "yes" {
		return contract.Errorf(contract.KindInvalid, "Tick the confirmation box: codes without their own expiry stop verifying at the project's")
	}
	return redirectDone(c, s.svc.SetProjectExpiry(c.Request.Context(), s.actor(c, se), id, &u), projectPath(id)+"?tab=settings", "expiry_set", "")
}

// expiryClearSubmit removes a project's expiry, with the same confirmation.
func (s *Server) expiryClearSubmit(c *gin.Context, se *Session) error {
	id := c.Param("project_id")
	if c.PostForm("confirm") != "yes" {
		return contract.Errorf(contract.KindInvalid, "Tick the confirmation box to clear the project's expiry")
	}
	return redirectDone(c, s.svc.SetProjectExpiry(c.Request.Context(), s.actor(c, se), id, nil), projectPath(id)+"?tab=settings", "expiry_cleared", "")
}

func (s *Server) importSubmit(c *gin.Context, se *Session) error {
	dry := c.PostForm("action") != "import"
	// admit has bounded the body to the route's MaxBody and read the form.
	fh, err := c.FormFile("file")
	if err != nil {
		return contract.Errorf(contract.KindInvalid, "Choose a CSV file to import")
	}
	if fh.Size > s.cfg.MaxImportBytes {
		return contract.Errorf(contract.KindTooLarge, "The CSV must be at most %d bytes", s.cfg.MaxImportBytes)
	}
	f, err := fh.Open()
	if err != nil {
		return contract.Errorf(contract.KindInvalid, "The uploaded file cannot be read")
	}
	defer f.Close()
	rep, err := s.svc.Import(c.Request.Context(), s.actor(c, se), c.Param("project_id"), f, dry)
	if err != nil {
		return err
	}
	return s.renderProject(c, se, projectExtra{Import: &rep})
}

// bulkView is the bulk-disable page's data (Changed: the count confirmed was stale; Count is
// the new one).
type bulkView struct {
	Project contract.Project
	Filter  bulkFilter
	Count   int64
	Batch   *contract.Batch
	Changed bool
}

// bulkDisablePage shows the count a bulk disable or batch revoke would disable, to confirm.
func (s *Server) bulkDisablePage(c *gin.Context, se *Session) error {
	f := bulkFilter{BatchID: strings.TrimSpace(c.Query("batch_id")), Status: c.Query("status"),
		Search: strings.TrimSpace(c.Query("search"))}
	return s.renderBulk(c, se, f, false)
}

func (s *Server) renderBulk(c *gin.Context, se *Session, f bulkFilter, changed bool) error {
	ctx, pid := c.Request.Context(), c.Param("project_id")
	p, err := s.ops.Project(ctx, pid, s.now())
	if err != nil {
		return err
	}
	cf, err := f.filter()
	if err != nil {
		return err
	}
	bv := bulkView{Project: p, Filter: f, Changed: changed}
	if f.BatchID != "" {
		b, err := s.ops.Batch(ctx, pid, f.BatchID)
		if err != nil {
			return err
		}
		bv.Batch = &b
	}
	if bv.Count, err = s.ops.CountMatching(ctx, pid, cf, s.now()); err != nil {
		return err
	}
	title := "Disable codes in bulk"
	if bv.Batch != nil {
		title = "Revoke batch " + bv.Batch.Name
	}
	var msg string
	if changed {
		msg = "The number of codes changed since it was shown: check the new count and confirm again."
	}
	s.render(c, se, http.StatusOK, "bulkdisable", title, "projects", msg, bv)
	return nil
}

// bulkDisableSubmit disables the codes of a confirmed filter; a stale count shows the
// confirmation again with the new one.
func (s *Server) bulkDisableSubmit(c *gin.Context, se *Session) error {
	pid := c.Param("project_id")
	f := bulkFilter{BatchID: trimForm(c, "batch_id"), Status: trimForm(c, "status"), Search: trimForm(c, "search")}
	want, err := s.confirmBulk(c, pid)
	if err != nil {
		return err
	}
	cf, err := f.filter()
	if err != nil {
		return err
	}
	n, err := s.svc.BulkDisable(c.Request.Context(), s.actor(c, se), pid, cf, want)
	return s.bulkDone(c, se, f, err, projectPath(pid)+"?tab=codes", "bulk_disabled", n)
}

// revokeBatchSubmit is the batch page's revoke: a bulk disable of the batch's codes.
func (s *Server) revokeBatchSubmit(c *gin.Context, se *Session) error {
	pid, bid := c.Param("project_id"), c.Param("batch_id")
	want, err := s.confirmBulk(c, pid)
	if err != nil {
		return err
	}
	n, err := s.svc.RevokeBatch(c.Request.Context(), s.actor(c, se), pid, bid, &want)
	return s.bulkDone(c, se, bulkFilter{BatchID: bid}, err, projectPath(pid)+"?tab=batches", "batch_revoked", n)
}

// confirmBulk reads a bulk form's confirmations: the project's name typed, and the count the
// operator saw.
func (s *Server) confirmBulk(c *gin.Context, pid string) (int64, error) {
	if err := s.confirmProjectName(c, pid); err != nil {
		return 0, err
	}
	want, err := strconv.ParseInt(trimForm(c, "expected_count"), 10, 64)
	if err != nil || want < 0 {
		return 0, contract.Errorf(contract.KindInvalid, "The confirmed count is missing: count the codes first")
	}
	return want, nil
}

// bulkDone answers a bulk form: the form again with the new count when it changed, else the
// project's tab with the flash done.
func (s *Server) bulkDone(c *gin.Context, se *Session, f bulkFilter, err error, path, done string, n int) error {
	if errors.Is(err, contract.ErrCountChanged) {
		return s.renderBulk(c, se, f, true)
	}
	return redirectDone(c, err, path, done, strconv.Itoa(n))
}

type projectBatch struct {
	Project contract.Project
	Batch   contract.Batch
}

func (s *Server) batchesPage(c *gin.Context, se *Session) error {
	ctx := c.Request.Context()
	ps, err := s.ops.Projects(ctx)
	if err != nil {
		return err
	}
	var rows []projectBatch
	for _, p := range ps {
		bs, err := s.ops.Batches(ctx, p.ID, batchesShown)
		if err != nil {
			return err
		}
		for _, b := range bs {
			rows = append(rows, projectBatch{Project: p, Batch: b})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Batch.CreatedAt > rows[j].Batch.CreatedAt })
	return s.page(c, se, "batches", "Generation batches", "batches", map[string]any{"Rows": rows})
}

// confirmProjectName refuses a destructive action on project pid (disabling it, revoking a
// batch, disabling codes in bulk) unless the form's confirm_name is the project's name as
// typed by the operator: a click alone never stops codes from verifying.
func (s *Server) confirmProjectName(c *gin.Context, pid string) error {
	p, err := s.ops.Project(c.Request.Context(), pid, s.now())
	if err != nil {
		return err
	}
	if trimForm(c, "confirm_name") != p.Name {
		return contract.Errorf(contract.KindInvalid, "The name typed does not match the project's name: nothing was changed")
	}
	return nil
}

// chartRange is one of the time ranges a chart offers: how far back it looks (Span), how wide
// each bar is (Bucket, whole hours: the counts are kept per hour), the bar's width in the axis
// title (Unit) and the layout of a bar's start under the x axis (TickFormat).
type chartRange struct {
	Key, Label       string
	Span, Bucket     time.Duration
	Unit, TickFormat string
}

var chartRanges = []chartRange{
	{Key: "24h", Label: "24 h", Span: 24 * time.Hour, Bucket: time.Hour, Unit: "per hour", TickFormat: "15:04"},
	{Key: "1h", Label: "1 h", Span: time.Hour, Bucket: time.Hour, Unit: "in the hour", TickFormat: "15:04"},
	{Key: "7d", Label: "7 d", Span: 7 * 24 * time.Hour, Bucket: 6 * time.Hour, Unit: "per 6 hours", TickFormat: "Mon 02"},
	{Key: "30d", Label: "30 d", Span: 30 * 24 * time.Hour, Bucket: 24 * time.Hour, Unit: "per day", TickFormat: "Jan 02"},
}

func rangeOf(key string) chartRange {
	for _, r := range chartRanges {
		if r.Key == key {
			return r
		}
	}
	return chartRanges[0]
}

// Chart geometry, in the SVG's user units, with room for the axes' labels.
const (
	chartW      = 760.0
	chartH      = 260.0
	chartLeft   = 64.0
	chartRight  = 8.0
	chartTop    = 12.0
	chartBottom = 40.0
)

// chartBar is one bucket of a chart: its counts and its two bars' geometry.
type chartBar struct {
	From, To                 time.Time
	Success, Refused         int64
	X, W, SY, SH, RX, RY, RH float64
}

type chartTick struct {
	Pos   float64
	Label string
}

// activityChart is a verify chart as a page draws it in SVG, with links to the other ranges.
type activityChart struct {
	Range                          chartRange
	Ranges                         []chartRange
	Bars                           []chartBar
	YTicks, XTicks                 []chartTick
	Success, Refused               int64
	Link                           string // the page's URL without its range, to append "range=7d"
	W, H, Left, Right, Top, Bottom float64
}

// niceCeil is the smallest 1, 2 or 5 × 10^k at or above v: the y axis's round top.
func niceCeil(v int64) int64 {
	if v <= 1 {
		return 1
	}
	p := int64(math.Pow(10, math.Floor(math.Log10(float64(v)))))
	for _, m := range []int64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// round1 rounds a coordinate to a tenth of a unit: finer than a pixel, shorter to send.
func round1(v float64) float64 { return math.Round(v*10) / 10 }

// buildChart lays hourly outcomes out in r's buckets, ending with the hour that holds now.
func buildChart(hours []contract.HourOutcomes, r chartRange, end time.Time, link string) activityChart {
	n := int(r.Span / r.Bucket)
	start := end.Add(-r.Span)
	ch := activityChart{Range: r, Ranges: chartRanges, Link: link, W: chartW, H: chartH,
		Left: chartLeft, Right: chartW - chartRight, Top: chartTop, Bottom: chartH - chartBottom}
	ch.Bars = make([]chartBar, n)
	for i := range ch.Bars {
		ch.Bars[i].From = start.Add(time.Duration(i) * r.Bucket)
		ch.Bars[i].To = ch.Bars[i].From.Add(r.Bucket)
	}
	for _, h := range hours {
		i := int(h.From.Sub(start) / r.Bucket)
		if i < 0 || i >= n {
			continue
		}
		ch.Bars[i].Success += h.Success
		ch.Bars[i].Refused += h.Refused
		ch.Success += h.Success
		ch.Refused += h.Refused
	}
	var top int64
	for _, b := range ch.Bars {
		top = max(top, b.Success, b.Refused)
	}
	top = niceCeil(top)
	plotH := ch.Bottom - ch.Top
	slot := (ch.Right - ch.Left) / float64(n)
	w := math.Max(slot*0.4, 1)
	height := func(v int64) float64 {
		h := plotH * float64(v) / float64(top)
		if v > 0 && h < 1 {
			h = 1 // a single verify stays visible
		}
		return h
	}
	for i := range ch.Bars {
		b := &ch.Bars[i]
		x := ch.Left + slot*float64(i) + slot*0.1
		b.X, b.W, b.RX = round1(x), round1(w), round1(x+w)
		b.SH, b.RH = round1(height(b.Success)), round1(height(b.Refused))
		b.SY, b.RY = round1(ch.Bottom-b.SH), round1(ch.Bottom-b.RH)
	}
	steps := int64(4)
	if top < 4 {
		steps = top // whole verifies only: 0 and 1, or 0, 1 and 2
	}
	for k := int64(0); k <= steps; k++ {
		ch.YTicks = append(ch.YTicks, chartTick{Pos: round1(ch.Bottom - plotH*float64(k)/float64(steps)), Label: thousands(top * k / steps)})
	}
	every := max(n/6, 1)
	for i := 0; i < n; i += every {
		ch.XTicks = append(ch.XTicks, chartTick{Pos: round1(ch.Left + slot*float64(i) + slot/2), Label: ch.Bars[i].From.UTC().Format(r.TickFormat)})
	}
	return ch
}

// chartFor lays out the verify outcomes of a project ("" for all) over the ?range= asked for;
// link is the page's URL with its other parameters, ending in "?" or "&".
func (s *Server) chartFor(c *gin.Context, se *Session, projectID, link string) (activityChart, error) {
	r := rangeOf(c.Query("range"))
	end := s.svc.now().UTC().Truncate(time.Hour).Add(time.Hour)
	hours, err := s.st.OutcomesByHour(c.Request.Context(), projectID, end.Add(-r.Span), end)
	if err != nil {
		return activityChart{}, fmt.Errorf("console: verify outcomes: %w", err)
	}
	return buildChart(hours, r, end, link), nil
}

// rangeLink is a page's URL with q's parameters (changed) except range and a flash's, ready
// for a range to be appended.
func rangeLink(path string, q url.Values) string {
	q.Del("range")
	q.Del("done")
	q.Del("n")
	if len(q) == 0 {
		return path + "?"
	}
	return path + "?" + q.Encode() + "&"
}
