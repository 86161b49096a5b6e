// Package client is a Go client of the service that signs every request with the contract's
// HMAC scheme. The tests, the benchmarks and Go users share it.
package client

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
)

// Client calls one project's endpoints with one API key.
type Client struct {
	BaseURL string // e.g. http://127.0.0.1:8080
	KeyID   string
	Secret  string
	HTTP    *http.Client     // http.DefaultClient when nil
	Now     func() time.Time // the clock of X-Timestamp; time.Now when nil
	// NoNonce leaves out X-Nonce and signs the original five-line string; two identical
	// requests within a second are then a replay (401).
	NoNonce bool
	// Retries is how many times a call is sent again, signed afresh, after a transport error or
	// a 502, 503 or 504, waiting RetryBackoff doubled each time (or a longer Retry-After). A
	// POST always carries an Idempotency-Key then (drawn when Options names none), so a retry
	// of a request that ran answers its stored outcome.
	Retries      int
	RetryBackoff time.Duration // the wait before the first retry; 100 ms when zero
	// OnRetry, when set, is told of every retry (attempt from 1) and what the previous one got.
	OnRetry func(method, path string, attempt int, err error)
}

// Error is a non-2xx answer.
type Error struct {
	Status int
	Detail string
	Header http.Header
}

func (e *Error) Error() string { return fmt.Sprintf("acv: HTTP %d: %s", e.Status, e.Detail) }

// Options are per-call extras.
type Options struct {
	IdempotencyKey string
}

// Sign sets the authentication headers on req for body (which must be what req sends).
func (c *Client) Sign(req *http.Request, body []byte) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	ts := strconv.FormatInt(now().Unix(), 10)
	nonce := ""
	if !c.NoNonce {
		nonce = randomHex()
		req.Header.Set("X-Nonce", nonce)
	}
	sts := contract.StringToSign(req.Method, req.URL.EscapedPath(), req.URL.RawQuery, contract.BodySHA256(body), ts, nonce)
	req.Header.Set("X-API-Key", c.KeyID)
	req.Header.Set("X-Timestamp", ts)
	req.Header.Set("X-Signature", contract.Sign(c.Secret, sts))
}

// Do sends a signed request to pathAndQuery (already encoded) and returns the raw answer.
func (c *Client) Do(ctx context.Context, method, pathAndQuery string, body []byte, hdr http.Header) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+pathAndQuery, bytes.NewReader(body))
	if err != nil {
		return nil, nil, fmt.Errorf("build request: %w", err)
	}
	if len(body) == 0 {
		req.Body, req.ContentLength = http.NoBody, 0
	} else {
		req.Header.Set("Content-Type", "application/json")
	}
	maps.Copy(req.Header, hdr)
	c.Sign(req, body)
	resp, err := cmp.Or(c.HTTP, http.DefaultClient).Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", method, pathAndQuery, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp, nil, fmt.Errorf("read answer of %s %s: %w", method, pathAndQuery, err)
	}
	return resp, b, nil
}

// call sends in (nil for no body) as JSON, retrying as Retries says, and decodes a 2xx answer
// into a T.
func call[T any](ctx context.Context, c *Client, method, pathAndQuery string, in any, o Options) (v T, _ http.Header, _ error) {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return v, nil, fmt.Errorf("encode body: %w", err)
		}
	}
	if c.Retries > 0 && method == http.MethodPost && o.IdempotencyKey == "" {
		o.IdempotencyKey = randomHex()
	}
	var hdr http.Header
	if o.IdempotencyKey != "" {
		hdr = http.Header{"Idempotency-Key": {o.IdempotencyKey}}
	}
	resp, b, err := c.Do(ctx, method, pathAndQuery, body, hdr)
	for attempt := 1; attempt <= c.Retries && retryable(ctx, resp, err); attempt++ {
		if c.OnRetry != nil {
			c.OnRetry(method, pathAndQuery, attempt, answerError(resp, b, err))
		}
		if c.backoff(ctx, attempt, resp) != nil {
			break
		}
		resp, b, err = c.Do(ctx, method, pathAndQuery, body, hdr)
	}
	if err != nil {
		return v, nil, err
	}
	if resp.StatusCode/100 != 2 {
		return v, resp.Header, answerError(resp, b, nil)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, resp.Header, fmt.Errorf("decode answer of %s %s: %w", method, pathAndQuery, err)
	}
	return v, resp.Header, nil
}

func get[T any](ctx context.Context, c *Client, pathAndQuery string) (T, error) {
	v, _, err := call[T](ctx, c, http.MethodGet, pathAndQuery, nil, Options{})
	return v, err
}

// Project reads the project with its statistics.
func (c *Client) Project(ctx context.Context, projectID string) (contract.Project, error) {
	return get[contract.Project](ctx, c, projectPath(projectID))
}

// ListParams select a page of codes; zero values are left out of the query.
type ListParams struct {
	Page, PageSize int
	Status, Search string
}

// ListCodes reads a page of codes.
func (c *Client) ListCodes(ctx context.Context, projectID string, p ListParams) (contract.CodePage, error) {
	q := url.Values{}
	nonZero := func(n int) string { return strings.TrimPrefix(strconv.Itoa(n), "0") } // 0 is ""
	for k, v := range map[string]string{"status": p.Status, "search": p.Search, "page": nonZero(p.Page), "page_size": nonZero(p.PageSize)} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return get[contract.CodePage](ctx, c, strings.TrimSuffix(projectPath(projectID)+"/codes?"+q.Encode(), "?"))
}

// CodeByValue reads one code by its value, with its verification history.
func (c *Client) CodeByValue(ctx context.Context, projectID, value string) (contract.Code, error) {
	return get[contract.Code](ctx, c, projectPath(projectID)+"/codes/by-code/"+url.PathEscape(value))
}

// CodeByID reads one code by its id, with its verification history.
func (c *Client) CodeByID(ctx context.Context, projectID, id string) (contract.Code, error) {
	return get[contract.Code](ctx, c, projectPath(projectID)+"/codes/"+url.PathEscape(id))
}

// Verify redeems a code. A business refusal is a nil error with Success false.
func (c *Client) Verify(ctx context.Context, projectID string, req contract.VerifyRequest, o Options) (contract.VerifyResponse, http.Header, error) {
	return call[contract.VerifyResponse](ctx, c, http.MethodPost, projectPath(projectID)+"/codes/verify", req, o)
}

// Reactivate resets a used code to unused.
func (c *Client) Reactivate(ctx context.Context, projectID string, req contract.ReactivateRequest, o Options) (contract.ReactivateResponse, http.Header, error) {
	return call[contract.ReactivateResponse](ctx, c, http.MethodPost, projectPath(projectID)+"/codes/reactivate", req, o)
}

func projectPath(projectID string) string { return "/api/v1/projects/" + url.PathEscape(projectID) }

// randomHex is 16 random bytes in hex: a nonce, or an Idempotency-Key the client draws.
func randomHex() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// retryable tells whether an attempt may be sent again while the caller still waits: it got
// no answer, or a 502, 503 or 504 (briefly unavailable).
func retryable(ctx context.Context, resp *http.Response, err error) bool {
	return ctx.Err() == nil && (err != nil || resp.StatusCode == http.StatusBadGateway ||
		resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusGatewayTimeout)
}

// answerError is what an attempt got, as the error a caller sees.
func answerError(resp *http.Response, body []byte, err error) error {
	if err != nil {
		return err
	}
	var eb contract.ErrorBody
	_ = json.Unmarshal(body, &eb)
	return &Error{Status: resp.StatusCode, Detail: eb.Detail, Header: resp.Header}
}

// backoff waits before retry attempt: RetryBackoff doubled for each earlier retry, or a longer
// Retry-After; without a nonce, past the current second (the same signature is a replay).
func (c *Client) backoff(ctx context.Context, attempt int, resp *http.Response) error {
	d := cmp.Or(c.RetryBackoff, 100*time.Millisecond) << (attempt - 1)
	if resp != nil {
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && time.Duration(s)*time.Second > d {
			d = time.Duration(s) * time.Second
		}
	}
	if c.NoNonce {
		now := time.Now()
		d = max(d, now.Truncate(time.Second).Add(time.Second).Sub(now))
	}
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
