package testkit

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/acv/acv/api"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	"github.com/pb33f/libopenapi-validator/paths"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// validators are the documents' validators by name, built once per test binary each.
var validators sync.Map // name -> func() (docValidator, error)

type docValidator struct {
	v     validator.Validator
	model *v3.Document
}

func validatorOf(name string, doc func() []byte) (docValidator, error) {
	f, _ := validators.LoadOrStore(name, sync.OnceValues(func() (docValidator, error) {
		parsed, err := libopenapi.NewDocument(doc())
		if err != nil {
			return docValidator{}, fmt.Errorf("parse %s: %w", name, err)
		}
		m, err := parsed.BuildV3Model()
		if err != nil {
			return docValidator{}, fmt.Errorf("build the model of %s: %w", name, err)
		}
		v, errs := validator.NewValidator(parsed)
		if len(errs) > 0 {
			return docValidator{}, fmt.Errorf("validator of %s: %v", name, errs)
		}
		return docValidator{v, &m.Model}, nil
	}))
	return f.(func() (docValidator, error))()
}

// OpenAPICheck is an http.RoundTripper that validates the response to every request the
// document describes against it and records each mismatch; other requests pass unchecked.
type OpenAPICheck struct {
	docValidator
	next http.RoundTripper
	opts *config.ValidationOptions

	checked  atomic.Int64
	mu       sync.Mutex
	failures []string
}

// NewOpenAPICheck wraps next (http.DefaultTransport when nil) checking against api/openapi.yaml
// as the service embeds it; when tb ends, each recorded mismatch fails it.
func NewOpenAPICheck(tb testing.TB, next http.RoundTripper) *OpenAPICheck {
	tb.Helper()
	return NewOpenAPICheckOf(tb, "api/openapi.yaml", api.OpenAPI, next)
}

// NewOpenAPICheckOf is NewOpenAPICheck against another document (the admin API's): name is
// how failures name it, doc returns it.
func NewOpenAPICheckOf(tb testing.TB, name string, doc func() []byte, next http.RoundTripper) *OpenAPICheck {
	tb.Helper()
	d, err := validatorOf(name, doc)
	if err != nil {
		tb.Fatal(err)
	}
	if next == nil {
		next = http.DefaultTransport
	}
	c := &OpenAPICheck{docValidator: d, next: next, opts: config.NewValidationOptions()}
	tb.Cleanup(func() {
		tb.Logf("%d responses checked against %s", c.Checked(), name)
		for _, f := range c.Failures() {
			tb.Errorf("response does not match %s: %s", name, f)
		}
	})
	return c
}

// Checked is how many responses were validated, for a test that wants to know the check ran.
func (c *OpenAPICheck) Checked() int64 { return c.checked.Load() }

// Failures are the mismatches recorded so far, one line each.
func (c *OpenAPICheck) Failures() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.failures...)
}

// RoundTrip sends the request with the wrapped transport and checks the response.
func (c *OpenAPICheck) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil || req.Method == http.MethodHead {
		return resp, err
	}
	vreq, ok := c.described(req)
	if !ok {
		return resp, nil
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		// The caller gets what arrived and then the error; a torn body says nothing of the document.
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
		return resp, nil
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	c.check(vreq, resp, body)
	return resp, nil
}

// described returns the request as the validator reads it when the document describes its
// path and method. A request with an opaque URL (Signer.Build) is read from a copy with a Path.
func (c *OpenAPICheck) described(req *http.Request) (*http.Request, bool) {
	vreq := req
	if req.URL.Opaque != "" {
		u, err := url.ParseRequestURI(req.URL.Opaque)
		if err != nil {
			return nil, false
		}
		u.Scheme, u.Host, u.RawQuery = req.URL.Scheme, req.URL.Host, req.URL.RawQuery
		vreq = req.Clone(req.Context())
		vreq.URL = u
	}
	item, errs, _ := paths.FindPath(vreq, c.model, c.opts)
	return vreq, item != nil && len(errs) == 0
}

func (c *OpenAPICheck) check(req *http.Request, resp *http.Response, body []byte) {
	c.checked.Add(1)
	copied := &http.Response{
		StatusCode: resp.StatusCode, Header: resp.Header.Clone(), Request: req,
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
	}
	ok, errs := c.v.ValidateHttpResponse(req, copied)
	if ok {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s answered %d:", req.Method, req.URL.RequestURI(), resp.StatusCode)
	for _, e := range errs {
		fmt.Fprintf(&b, " [%s: %s", e.Message, e.Reason)
		for _, s := range e.SchemaValidationErrors {
			if s.FieldPath != "" {
				fmt.Fprintf(&b, "; %s at %s", s.Reason, s.FieldPath)
			} else {
				fmt.Fprintf(&b, "; %s", s.Reason)
			}
		}
		b.WriteString("]")
	}
	fmt.Fprintf(&b, "; headers %v; body %s", resp.Header, body[:min(len(body), 2048)])
	c.mu.Lock()
	c.failures = append(c.failures, b.String())
	c.mu.Unlock()
}

// errReader fails every read with err.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
