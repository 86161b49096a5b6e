package console

import (
	"net/http"
	"net/url"
	"time"

	"github.com/gin-gonic/gin"
)

// logsPage shows a verification-log search: the filter form, one page of logs newest first,
// the link to the next page and to the CSV of every matching log.
func (s *Server) logsPage(c *gin.Context, se *Session) error {
	q, err := logSearchQuery(c)
	if err != nil {
		return err
	}
	page, err := s.svc.SearchLogs(c.Request.Context(), s.actor(c, se), q)
	if err != nil {
		return err
	}
	// The filters as given, so the next page and the CSV keep them; the range as covered, so
	// a default range stays the same while paging.
	keep := url.Values{}
	for _, k := range []string{"project_id", "code", "action", "result", "reason", "verified_by", "ip"} {
		if v := c.Query(k); v != "" {
			keep.Set(k, v)
		}
	}
	keep.Set("from", page.From.UTC().Format(time.RFC3339))
	keep.Set("to", page.To.UTC().Format(time.RFC3339))
	// The form shows a range only when one was asked for: an empty field is "the last 24 hours
	// up to now", so a search submitted again a minute later still finds the newest logs (a
	// field filled with the minute shown would cut them off).
	inputs := map[string]string{}
	for _, k := range []string{"from", "to"} {
		if c.Query(k) != "" {
			t, _ := queryTime(c, k) // already read without error by logSearchQuery
			inputs[k] = t.UTC().Format("2006-01-02T15:04")
		}
	}
	names, ps, err := s.projectNames(c, se)
	if err != nil {
		return err
	}
	v := viewFor(se, "Verification logs", "logs")
	v.Data = map[string]any{"Search": q, "Page": page, "CSV": "/logs.csv?" + keep.Encode(),
		"FromInput": inputs["from"], "ToInput": inputs["to"], "Names": names, "Projects": ps,
		"Pager": keysetPager(c, keep, "/logs", "after", page.NextAfter, len(page.Items), q.Limit, -1)}
	s.render(c, http.StatusOK, "logs", v)
	return nil
}
