package console

import "github.com/gin-gonic/gin"

// projectTab is one tab of the project page: its ?tab= key and its label.
type projectTab struct{ Key, Label string }

// projectTabs are the project page's tabs, each a URL of its own (?tab=), the overview first.
var projectTabs = []projectTab{
	{"overview", "Overview"}, {"codes", "Codes"}, {"keys", "API keys"}, {"batches", "Batches"}, {"settings", "Settings"},
}

// projectTabOf is the tab a project page shows: the one a form's answer belongs to (a new
// key's secret, an import's report), else the one ?tab= names, else the overview.
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
