package cache

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ErrNotCached is returned when Redis holds no state for a code; the caller loads it.
var ErrNotCached = errors.New("code not in redis")

// CodeState is a code's live state as Redis holds it.
type CodeState struct {
	ID           string
	Code         string
	ExpiresAt    *int64 // unix s, the code's own expiry
	VerifiedAtMs int64  // 0 = unused
	VerifiedBy   string
	Disabled     bool
	Version      int64
}

// PutCode stores a code unless Redis already holds a state for it (Redis is always the newer
// one). It reports whether it stored.
func (c *Cache) PutCode(ctx context.Context, projectID string, s CodeState) (bool, error) {
	n, err := putCodeScript.Run(ctx, c.rdb, []string{codeKey(projectID, s.Code)}, putCodeArgs(s)...).Int()
	if err != nil {
		return false, fmt.Errorf("put code: %w", err)
	}
	return n == 1, nil
}

// PutCodes stores many new codes of one project in pipelined batches, with PutCode's rule.
func (c *Cache) PutCodes(ctx context.Context, projectID string, codes []CodeState) error {
	if err := putCodeScript.Load(ctx, c.rdb).Err(); err != nil {
		return fmt.Errorf("load putcode script: %w", err)
	}
	const batch = 2000
	for start := 0; start < len(codes); start += batch {
		end := min(start+batch, len(codes))
		pipe := c.rdb.Pipeline()
		for _, s := range codes[start:end] {
			putCodeScript.EvalSha(ctx, pipe, []string{codeKey(projectID, s.Code)}, putCodeArgs(s)...)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("put codes %d..%d: %w", start, end, err)
		}
	}
	return nil
}

func putCodeArgs(s CodeState) []interface{} {
	exp, vat, dis := "", "", "0"
	if s.ExpiresAt != nil {
		exp = strconv.FormatInt(*s.ExpiresAt, 10)
	}
	if s.VerifiedAtMs > 0 {
		vat = strconv.FormatInt(s.VerifiedAtMs, 10)
	}
	if s.Disabled {
		dis = "1"
	}
	return []interface{}{rawID(s.ID), exp, vat, s.VerifiedBy, dis, s.Version}
}

// MarkUnknown remembers for ttl that value does not exist in the project (0 = default), so
// repeated attempts on it are answered by Redis alone.
func (c *Cache) MarkUnknown(ctx context.Context, projectID, value string, ttl time.Duration) error {
	if ttl <= 0 {
		ttl = defaultUnknownCodeTTL
	}
	if err := unknownScript.Run(ctx, c.rdb, []string{codeKey(projectID, value)}, int64(ttl/time.Second)).Err(); err != nil {
		return fmt.Errorf("mark unknown code: %w", err)
	}
	return nil
}

// Code reads a code's live state. It returns ErrNotCached when Redis holds nothing for it, and
// found=false when Redis remembers the value as unknown.
func (c *Cache) Code(ctx context.Context, projectID, value string) (s CodeState, found bool, err error) {
	m, err := c.rdb.HGetAll(ctx, codeKey(projectID, value)).Result()
	if err != nil {
		return CodeState{}, false, fmt.Errorf("read code: %w", err)
	}
	if len(m) == 0 {
		return CodeState{}, false, ErrNotCached
	}
	if m["z"] == "1" {
		return CodeState{}, false, nil
	}
	s = CodeState{ID: hexID(m["i"]), Code: value, VerifiedBy: m["b"], Disabled: m["d"] == "1"}
	if x, ok := m["x"]; ok {
		v, _ := strconv.ParseInt(x, 10, 64)
		s.ExpiresAt = &v
	}
	s.VerifiedAtMs, _ = strconv.ParseInt(m["t"], 10, 64)
	s.Version, _ = strconv.ParseInt(m["n"], 10, 64)
	return s, true, nil
}

// SetDisabled sets or clears a code's disable flag as a new version and returns the resulting
// state, which the caller writes to Postgres. ErrNotCached means: load the code, then retry.
func (c *Cache) SetDisabled(ctx context.Context, projectID, value string, disabled bool) (CodeState, error) {
	flag := "0"
	if disabled {
		flag = "1"
	}
	v, err := disableScript.Run(ctx, c.rdb, []string{codeKey(projectID, value)}, flag).Slice()
	if err != nil {
		return CodeState{}, fmt.Errorf("set code disabled: %w", err)
	}
	if len(v) != 4 {
		return CodeState{}, fmt.Errorf("disable script replied %d fields, want 4", len(v))
	}
	if toInt(v[0]) == 1 {
		return CodeState{}, ErrNotCached
	}
	return CodeState{Code: value, VerifiedAtMs: toInt(v[1]), VerifiedBy: toString(v[2]), Disabled: disabled, Version: toInt(v[3])}, nil
}
