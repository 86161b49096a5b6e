// Package adminclient is a client of acv's admin API (the console's JSON API under
// /admin/api/v1), as the acv command uses it: every call carries an API token.
package adminclient

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
)

// Prefix is where the admin API is served on the console's address.
const Prefix = "/admin/api/v1"

// Client calls one admin API with one token.
type Client struct {
	URL    string       // the console's address, e.g. http://127.0.0.1:8081
	Token  string       // sent as "Authorization: Bearer"; empty sends none (a login)
	HTTP   *http.Client // a client with a one-minute timeout when nil
	Header http.Header  // sent on every request: a login's CSRF token
}

// Error is a refusal of the API: its status and the sentence of its {"detail"} body.
type Error struct {
	Status int
	Detail string
}

func (e *Error) Error() string { return fmt.Sprintf("%s (HTTP %d)", e.Detail, e.Status) }

// StatusOf is the HTTP status of an API refusal, 0 for any other error.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

var defaultHTTP = &http.Client{Timeout: time.Minute}

// Do sends a JSON request (body nil for none) and decodes a 2xx answer into out (nil to
// ignore it). A non-2xx answer is an *Error.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		r = bytes.NewReader(b)
	}
	resp, err := c.Send(ctx, method, path, "application/json", r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("read the answer of %s %s: %w", method, path, err)
	}
	return nil
}

// Send sends a request with a body of any type (a CSV import) and returns a 2xx answer for the
// caller to read and close (an export); a non-2xx answer is an *Error.
func (c *Client) Send(ctx context.Context, method, path, contentType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.URL, "/")+Prefix+path, body)
	if err != nil {
		return nil, fmt.Errorf("admin API request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	maps.Copy(req.Header, c.Header)
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := cmp.Or(c.HTTP, defaultHTTP).Do(req)
	if err != nil {
		return nil, fmt.Errorf("reach the admin API at %s: %w", c.URL, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	var e struct {
		Detail string `json:"detail"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(b, &e) != nil || e.Detail == "" {
		e.Detail = cmp.Or(strings.TrimSpace(string(b)), http.StatusText(resp.StatusCode))
	}
	return nil, &Error{Status: resp.StatusCode, Detail: e.Detail}
}

// Path builds an API path from segments, each escaped (a code value may hold a slash), and a query.
func Path(q url.Values, segments ...string) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	if len(q) > 0 {
		b.WriteByte('?')
		b.WriteString(q.Encode())
	}
	return b.String()
}

// Call sends a JSON request (body nil for none) and decodes a 2xx answer as a T.
func Call[T any](ctx context.Context, c *Client, method, path string, body any) (T, error) {
	var v T
	err := c.Do(ctx, method, path, body, &v)
	return v, err
}

// Account is a console account.
type Account struct {
	ID                 string `json:"id"`
	Username           string `json:"username"`
	Role               string `json:"role"`
	MustChangePassword bool   `json:"must_change_password"`
	Disabled           bool   `json:"disabled"`
	CreatedAt          int64  `json:"created_at"`
}

// NewAccount is an account just made or reset, with its one-time password.
type NewAccount struct {
	Account
	OneTimePassword string `json:"one_time_password"`
}

// Session is what a login (POST /session: a cookie, and the CSRF token every unsafe call of the
// session carries in Header) and /me answer.
type Session struct {
	Account   Account `json:"account"`
	CSRFToken string  `json:"csrf_token"`
}

// Me reads the account the token acts as (its role is the token's when lower).
func (c *Client) Me(ctx context.Context) (Session, error) {
	return Call[Session](ctx, c, http.MethodGet, "/me", nil)
}

// CreateToken makes a token for the caller's account; role "" is the caller's, ttl 0 the
// server's default.
func (c *Client) CreateToken(ctx context.Context, name, role string, ttl time.Duration) (contract.NewAPIToken, error) {
	body := map[string]any{"name": name, "role": role, "expires_in": int64(ttl / time.Second)}
	return Call[contract.NewAPIToken](ctx, c, http.MethodPost, "/tokens", body)
}

// Logout ends the session or token the client holds.
func (c *Client) Logout(ctx context.Context) error {
	return c.Do(ctx, http.MethodDelete, "/session", nil, nil)
}
