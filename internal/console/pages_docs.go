package console

import (
	"net/http"

	"github.com/acv/acv/api"
	"github.com/acv/acv/docs"
	"github.com/gin-gonic/gin"
)

// docsPage links what an integrator or an operator scripting the console reads: the client
// API's OpenAPI document, the admin API's, and the client API guide with its signing steps.
func (s *Server) docsPage(c *gin.Context, se *Session) error {
	v := viewFor(se, "Documentation", "docs")
	v.Data = map[string]any{"AdminOpenAPI": APIPrefix + "/openapi.yaml"}
	s.render(c, http.StatusOK, "docs", v)
	return nil
}

// apiGuidePage shows docs/api.md, the file the repository keeps, as a page with a table of
// contents.
func (s *Server) apiGuidePage(c *gin.Context, se *Session) error {
	blocks := markdownBlocks(string(docs.APIGuide()))
	var toc []mdBlock
	for _, b := range blocks {
		if b.Level == 2 || b.Level == 3 {
			toc = append(toc, b)
		}
	}
	v := viewFor(se, "Client API guide", "docs")
	v.Data = map[string]any{"Blocks": blocks, "TOC": toc}
	s.render(c, http.StatusOK, "apiguide", v)
	return nil
}

// apiGuideMarkdown serves docs/api.md as it is, for reading elsewhere.
func (s *Server) apiGuideMarkdown(c *gin.Context, _ *Session) error {
	c.Data(http.StatusOK, "text/markdown; charset=utf-8", docs.APIGuide())
	return nil
}

// clientOpenAPI serves the client API's OpenAPI document, the one every API replica serves at
// /openapi.yaml, so the console links it without knowing the API's address.
func (s *Server) clientOpenAPI(c *gin.Context, _ *Session) error {
	c.Data(http.StatusOK, api.OpenAPIContentType, api.OpenAPI())
	return nil
}
