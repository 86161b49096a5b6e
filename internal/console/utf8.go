package console

import (
	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// requireUTF8 refuses, with a 400, a request whose query string or posted form is not valid
// UTF-8 once percent-decoded, before the handler reads either: the bytes would reach a
// database text column, a JSON answer or the audit log's JSON detail, which refuse them or
// rewrite them to U+FFFD. The form is the one the chain has read (readForm, or the CSRF check
// reading its token field); the API's handlers read no form. A JSON body is checked where it
// is read (bindJSON). Both chains call it after the session, role and CSRF checks, as the
// client API checks after authentication.
func requireUTF8(c *gin.Context) error {
	if err := contract.ValidateQueryUTF8(c.Request.URL.RawQuery); err != nil {
		return err
	}
	if err := contract.ValidateFormUTF8(c.Request.PostForm); err != nil {
		return err
	}
	if f := c.Request.MultipartForm; f != nil {
		return contract.ValidateFormUTF8(f.Value)
	}
	return nil
}
