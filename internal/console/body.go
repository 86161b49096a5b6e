package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

var errNotJSON = &contract.Error{Kind: contract.KindUnsupportedMediaType, Message: "Request body must be JSON (Content-Type: application/json)"}

// bindJSON reads a request's JSON object into v: Content-Type application/json (a cross-site
// form cannot send it without the browser asking first), at most MaxBodyBytes (or the route's
// lower limit), valid UTF-8 with no lone surrogate escapes, exactly one object, no unknown
// fields.
func (s *Server) bindJSON(c *gin.Context, v any) error {
	if mt, _, _ := mime.ParseMediaType(c.ContentType()); mt != "application/json" {
		return errNotJSON
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, s.cfg.MaxBodyBytes))
	if tooLarge := errTooLarge(err); tooLarge != nil {
		// The route's own limit (boundBody) when it is the lower one: the login's.
		return tooLarge
	}
	if err != nil {
		return contract.Errorf(contract.KindInvalid, "Could not read the request body")
	}
	// Before decoding: encoding/json would turn invalid UTF-8 and lone surrogates into U+FFFD.
	if err := contract.ValidateBodyUTF8(body); err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return contract.Errorf(contract.KindInvalid, "Field %s has the wrong type", te.Field)
		}
		return contract.Errorf(contract.KindInvalid, "Malformed JSON body: %s", jsonProblem(err))
	}
	if d.More() {
		return contract.Errorf(contract.KindInvalid, "Malformed JSON body: one object expected")
	}
	return nil
}

// jsonProblem is the part of a decoding error worth showing: which field is unknown, or that
// the syntax is wrong.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "invalid syntax"
	}
	return err.Error()
}

// pathValue is a path parameter decoded with path rules ('+' stays '+'); routing runs on the
// escaped path so an encoded '/' stays inside its segment.
func pathValue(c *gin.Context, name string) (string, error) {
	v, err := url.PathUnescape(c.Param(name))
	if err != nil {
		return "", contract.Errorf(contract.KindInvalid, "Path parameter %s is not valid percent-encoding", name)
	}
	return v, nil
}

// queryInt reads an optional integer query parameter.
func queryInt(c *gin.Context, name string, def int) (int, error) {
	v := c.Query(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, contract.Errorf(contract.KindInvalid, "Query parameter %s must be an integer", name)
	}
	return n, nil
}

// queryTime reads an optional time query parameter: Unix seconds or RFC 3339.
func queryTime(c *gin.Context, name string) (time.Time, error) {
	v := c.Query(name)
	if v == "" {
		return time.Time{}, nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Unix(n, 0), nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	// A page's <input type="datetime-local"> sends a time without a zone: the console's pages
	// show UTC, so it is read as UTC.
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, contract.Errorf(contract.KindInvalid, "Query parameter %s must be Unix seconds or RFC 3339 (or YYYY-MM-DDTHH:MM in UTC)", name)
}
