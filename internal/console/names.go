package console

import (
	"net/url"
	"unicode/utf8"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// shortID is an id as a person scans it in a table: its first 8 characters and an ellipsis;
// the page keeps the whole id in a title and a copy button beside it.
func shortID(id string) string {
	if utf8.RuneCountInString(id) <= 12 {
		return id
	}
	return id[:8] + "…"
}

// queryWith is a URL query of key-value pairs, empty values left out: a tab's or a page's
// link that keeps a table's filters.
func queryWith(kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q.Encode()
}

// servesPage is whether the console has a page at path (GET), so the navigation links only
// to pages this build serves.
func (s *Server) servesPage(path string) bool {
	for _, r := range s.pageRoutes() {
		if r.Path == path && r.Method == "GET" {
			return true
		}
	}
	return false
}

// failedFlashes are the redirects' messages that report a refused or failed action: the page
// shows them as errors.
var failedFlashes = map[string]bool{"verify_failed": true, "reactivate_failed": true, "batch_failed": true}

// projectNames maps every project's id to its name, for pages that show a project where a
// record holds its id (logs, audit entries); the projects too, for a filter's choice.
func (s *Server) projectNames(c *gin.Context, se *Session) (map[string]string, []contract.Project, error) {
	ps, err := s.svc.Projects(c.Request.Context(), s.actor(c, se))
	if err != nil {
		return nil, nil, err
	}
	names := make(map[string]string, len(ps))
	for _, p := range ps {
		names[p.ID] = p.Name
	}
	return names, ps, nil
}
