package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// The requests of the scenarios, as loadtest/k6/lib/sign.js sends them; endpoint names the
// request in the metrics and thresholds.
func (x *run) projectPath() string {
	return "/api/v1/projects/" + escape(x.r.Target.ProjectID)
}

// escape percent-encodes a path segment or query component strictly: RFC 3986's unreserved
// characters stay, everything else is encoded, so what is signed is exactly what is sent.
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func (x *run) verify(ctx context.Context, phase, code, by string) answer {
	body := map[string]string{"code": code}
	if by != "" {
		body["verified_by"] = by
	}
	return x.send(ctx, phase, "verify", http.MethodPost, x.projectPath()+"/codes/verify", body)
}

func (x *run) reactivateCode(ctx context.Context, phase, code, by, reason string) answer {
	body := map[string]string{"code": code}
	if by != "" {
		body["reactivated_by"] = by
	}
	if reason != "" {
		body["reason"] = reason
	}
	return x.send(ctx, phase, "reactivate", http.MethodPost, x.projectPath()+"/codes/reactivate", body)
}

func (x *run) codeByValue(ctx context.Context, phase, endpoint, value string) answer {
	return x.send(ctx, phase, endpoint, http.MethodGet, x.projectPath()+"/codes/by-code/"+escape(value), nil)
}

func (x *run) codeByID(ctx context.Context, phase, endpoint, id string) answer {
	return x.send(ctx, phase, endpoint, http.MethodGet, x.projectPath()+"/codes/"+escape(id), nil)
}

func (x *run) project(ctx context.Context, phase, endpoint string) answer {
	return x.send(ctx, phase, endpoint, http.MethodGet, x.projectPath(), nil)
}

// listCodes lists codes with the query's pairs, in their order (status, search, page,
// page_size; empty values left out).
func (x *run) listCodes(ctx context.Context, phase, endpoint string, pairs ...[2]string) answer {
	var q []string
	for _, p := range pairs {
		if p[1] != "" {
			q = append(q, escape(p[0])+"="+escape(p[1]))
		}
	}
	path := x.projectPath() + "/codes"
	if len(q) > 0 {
		path += "?" + strings.Join(q, "&")
	}
	return x.send(ctx, phase, endpoint, http.MethodGet, path, nil)
}

// object is a JSON object of an answer, read with its numbers as written, so a check can tell
// an integer from a fraction and a null from a missing field, as the k6 scripts' checks do.
type object map[string]any

// decode reads the answer's body as a JSON object; nil when it is not one.
func (a answer) decode() object {
	d := json.NewDecoder(bytes.NewReader(a.body))
	d.UseNumber()
	var o map[string]any
	if d.Decode(&o) != nil {
		return nil
	}
	return o
}

func (o object) has(k string) bool { _, ok := o[k]; return ok }

// str is the field as a string; "" when it is not one.
func (o object) str(k string) string {
	s, _ := o[k].(string)
	return s
}

// isTrue is k6's `o.k === true`.
func (o object) isTrue(k string) bool { return o[k] == true }

// isFalse is k6's `o.k === false`.
func (o object) isFalse(k string) bool { return o[k] == false }

func (o object) isNull(k string) bool {
	v, ok := o[k]
	return ok && v == nil
}

// integer is the field as an integer, when it is one.
func (o object) integer(k string) (int64, bool) {
	n, ok := o[k].(json.Number)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(n.String(), 10, 64)
	return i, err == nil
}

func (o object) isInt(k string) bool { _, ok := o.integer(k); return ok }

func (o object) isNullOrInt(k string) bool { return o.isNull(k) || o.isInt(k) }

// is tells whether the field is a T.
func is[T any](o object, k string) bool {
	_, ok := o[k].(T)
	return ok
}

func (o object) object(k string) object {
	m, _ := o[k].(map[string]any)
	return m
}

func (o object) array(k string) ([]any, bool) {
	a, ok := o[k].([]any)
	return a, ok
}

// codeShape is the contract's code resource: every field of its type.
func codeShape(c object) bool {
	return c != nil && is[string](c, "id") && is[string](c, "code") && is[bool](c, "status") &&
		is[bool](c, "is_disabled") && is[bool](c, "is_expired") && c.isNullOrInt("expires_at") &&
		c.isNullOrInt("verified_at") && c.isInt("created_at") && (c.isNull("verified_by") || is[string](c, "verified_by"))
}
