package console

import (
	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// importSubmit takes the project page's import form: a CSV file and which button was pressed,
// "check" (a dry run) or "import". The answer is the project page with the report and its
// problem rows, so an operator checks a file, fixes it and imports it from one place.
func (s *Server) importSubmit(c *gin.Context, se *Session) error {
	dry := c.PostForm("action") != "import"
	// pageChain has bounded the body to the route's MaxBody and read the form.
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
