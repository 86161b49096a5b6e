package admin

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"unicode/utf8"

	"github.com/acv/acv/api"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/store"
)

// DefaultCharset has no look-alike characters (no 0/O, 1/I/L), so codes read aloud or typed
// from a card survive.
const DefaultCharset = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

// GenerateSpec describes a batch of random codes.
type GenerateSpec struct {
	Count     int
	Length    int    // random characters, without prefix and suffix
	Charset   string // DefaultCharset when empty
	Prefix    string
	Suffix    string
	ExpiresAt *int64 // unix s; nil: the project's expiry applies
}

const generateBatch = 50_000

// Generate creates spec.Count new codes, unique within the project: values that collide with
// existing ones are drawn again. progress (may be nil) is told how many are done.
func (a *Admin) Generate(ctx context.Context, projectID string, spec GenerateSpec, progress func(done int)) (int, error) {
	if spec.Charset == "" {
		spec.Charset = DefaultCharset
	}
	if spec.Count < 1 || spec.Length < 1 {
		return 0, errors.New("count and length must be at least 1")
	}
	alphabet := []rune(spec.Charset)
	if len(alphabet) < 2 {
		return 0, errors.New("charset needs at least 2 characters")
	}
	if n := utf8.RuneCountInString(spec.Prefix) + spec.Length + utf8.RuneCountInString(spec.Suffix); n > api.MaxCodeLen {
		return 0, fmt.Errorf("codes would be %d characters; at most %d", n, api.MaxCodeLen)
	}
	if err := api.ValidateCode(spec.Prefix + spec.Charset + spec.Suffix); err != nil {
		return 0, fmt.Errorf("prefix, charset or suffix: %w", err)
	}
	done, barren := 0, 0
	for done < spec.Count {
		want := min(generateBatch, spec.Count-done)
		batch := make([]store.NewCode, want)
		seen := make(map[string]struct{}, want)
		for i := range batch {
			v, err := randomCode(alphabet, spec)
			if err != nil {
				return done, err
			}
			if _, dup := seen[v]; dup {
				continue
			}
			seen[v] = struct{}{}
			batch[i] = store.NewCode{Code: v, ExpiresAt: spec.ExpiresAt}
		}
		n, err := a.insert(ctx, projectID, compact(batch))
		if err != nil {
			return done, err
		}
		if n == 0 {
			if barren++; barren > 20 {
				return done, errors.New("the code space is exhausted: use longer codes or a larger charset")
			}
		}
		done += n
		if progress != nil {
			progress(done)
		}
	}
	return done, nil
}

func compact(b []store.NewCode) []store.NewCode {
	out := b[:0]
	for _, c := range b {
		if c.Code != "" {
			out = append(out, c)
		}
	}
	return out
}

// insert writes codes to Postgres, then the ones actually inserted to Redis.
func (a *Admin) insert(ctx context.Context, projectID string, codes []store.NewCode) (int, error) {
	rows, err := a.Store.InsertCodes(ctx, projectID, codes)
	if err != nil {
		return 0, err
	}
	states := make([]cache.CodeState, len(rows))
	for i, r := range rows {
		states[i] = CodeState(r)
	}
	if err := a.Cache.PutCodes(ctx, projectID, states); err != nil {
		return 0, err
	}
	return len(rows), nil
}

func randomCode(alphabet []rune, spec GenerateSpec) (string, error) {
	out := make([]rune, 0, spec.Length)
	max := big.NewInt(int64(len(alphabet)))
	for i := 0; i < spec.Length; i++ {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", fmt.Errorf("read random: %w", err)
		}
		out = append(out, alphabet[n.Int64()])
	}
	return spec.Prefix + string(out) + spec.Suffix, nil
}
