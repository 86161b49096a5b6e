package admin

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/acv/acv/api/contract"
)

// DefaultCharset has no look-alike characters (no 0/O, 1/I/L), so codes read aloud or typed
// from a card survive.
const DefaultCharset = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

const generateBatch = 50_000

// checkSpec refuses a spec no code could be drawn from, with the message an operator sees.
func checkSpec(spec *contract.GenerateSpec) error {
	if spec.Charset == "" {
		spec.Charset = DefaultCharset
	}
	if spec.Count < 1 || spec.Length < 1 {
		return contract.Errorf(contract.KindInvalid, "count and length must be at least 1")
	}
	alphabet := []rune(spec.Charset)
	if len(alphabet) < 2 || len(alphabet) > 256 {
		return contract.Errorf(contract.KindInvalid, "charset needs 2 to 256 characters")
	}
	if n := utf8.RuneCountInString(spec.Prefix) + spec.Length + utf8.RuneCountInString(spec.Suffix); n > contract.MaxCodeLen {
		return contract.Errorf(contract.KindInvalid, "codes would be %d characters; at most %d", n, contract.MaxCodeLen)
	}
	if err := contract.ValidateCode(spec.Prefix + spec.Charset + spec.Suffix); err != nil {
		return contract.Errorf(contract.KindInvalid, "prefix, charset or suffix: %v", err)
	}
	if spec.Step <= 0 {
		spec.Step = generateBatch
	}
	return nil
}

// Generate creates spec.Count new codes, unique within the project: values that collide with
// existing ones are drawn again. progress (may be nil) is told how many are done.
func (a *Admin) Generate(ctx context.Context, projectID string, spec contract.GenerateSpec, progress func(done int)) (int, error) {
	return a.generateInto(ctx, projectID, "", spec, progress)
}

// generateInto is Generate, tying the codes to batchID when it is not "".
func (a *Admin) generateInto(ctx context.Context, projectID, batchID string, spec contract.GenerateSpec, progress func(done int)) (int, error) {
	if err := checkSpec(&spec); err != nil {
		return 0, err
	}
	if _, err := a.Store.Project(ctx, projectID); err != nil {
		return 0, notFound(err, "project", projectID)
	}
	d := newDrawer([]rune(spec.Charset), spec)
	l := a.newLoader(ctx, projectID, batchID)
	done, err := a.generate(ctx, projectID, spec, d, l, progress)
	if cerr := l.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return done, err
	}
	return done, a.Store.AfterBulkLoad(ctx)
}

func (a *Admin) generate(ctx context.Context, projectID string, spec contract.GenerateSpec, d *drawer, l *loader, progress func(done int)) (int, error) {
	done, barren, factor := 0, 0, 1
	for done < spec.Count {
		want := min(spec.Step, spec.Count-done)
		batch, err := a.draw(ctx, projectID, d, want, min(want*factor, 4*max(spec.Step, generateBatch)))
		if err != nil {
			return done, err
		}
		n, err := l.insert(ctx, batch)
		if err != nil {
			return done, err
		}
		done += n
		if progress != nil {
			progress(done)
		}
		// Few new values per draw means the code space is filling up: draw more candidates.
		if n < want/2+1 {
			factor = min(factor*4, 1<<16)
		}
		if n == 0 {
			if barren++; barren > 5 {
				return done, contract.Errorf(contract.KindConflict, "the code space is exhausted: use longer codes or a larger charset")
			}
		}
	}
	return done, nil
}

// draw returns up to want random values the project does not hold yet, out of candidates drawn.
func (a *Admin) draw(ctx context.Context, projectID string, d *drawer, want, candidates int) ([]contract.NewCode, error) {
	seen := make(map[string]struct{}, candidates)
	values := make([]string, 0, candidates)
	for i := 0; i < candidates; i++ {
		v, err := d.code()
		if err != nil {
			return nil, err
		}
		if _, dup := seen[v]; !dup {
			seen[v] = struct{}{}
			values = append(values, v)
		}
	}
	if candidates > want {
		existing, err := a.Store.ExistingValues(ctx, projectID, values)
		if err != nil {
			return nil, err
		}
		for _, v := range existing {
			delete(seen, v)
		}
	}
	batch := make([]contract.NewCode, 0, want)
	for _, v := range values {
		if _, ok := seen[v]; ok && len(batch) < want {
			batch = append(batch, contract.NewCode{Code: v, ExpiresAt: d.spec.ExpiresAt})
		}
	}
	return batch, nil
}

// loader writes batches of new codes to Postgres and, one batch behind, to Redis, so the two
// stores load at the same time. A code already in Postgres but not yet in Redis is served all
// the same: the hot path loads it on first use.
type loader struct {
	a         *Admin
	projectID string
	batchID   string // "" when the codes belong to no batch
	batches   chan []contract.CodeRecord
	done      chan error
}

func (a *Admin) newLoader(ctx context.Context, projectID, batchID string) *loader {
	l := &loader{a: a, projectID: projectID, batchID: batchID, batches: make(chan []contract.CodeRecord, 1), done: make(chan error, 1)}
	go func() {
		var err error
		for states := range l.batches {
			if err == nil {
				err = a.Cache.PutCodes(ctx, projectID, states)
			}
		}
		l.done <- err
	}()
	return l
}

// insert writes codes to Postgres and queues the ones actually inserted for Redis.
func (l *loader) insert(ctx context.Context, codes []contract.NewCode) (int, error) {
	rows, err := l.insertRows(ctx, codes)
	return len(rows), err
}

// insertRows is insert returning the rows inserted, so an import can tell which codes were
// already there.
func (l *loader) insertRows(ctx context.Context, codes []contract.NewCode) ([]contract.CodeRecord, error) {
	var (
		rows []contract.CodeRecord
		err  error
	)
	if l.batchID != "" {
		rows, err = l.a.Store.InsertBatchCodes(ctx, l.projectID, l.batchID, codes)
	} else {
		rows, err = l.a.Store.InsertCodes(ctx, l.projectID, codes)
	}
	if err != nil {
		return nil, err
	}
	l.batches <- rows
	return rows, nil
}

// close waits until Redis holds every queued batch.
func (l *loader) close() error {
	close(l.batches)
	return <-l.done
}

// drawer draws uniform random code values from crypto/rand, buffered, with rejection sampling
// so every character of the alphabet is equally likely.
type drawer struct {
	src      *bufio.Reader
	alphabet []rune
	limit    int // bytes at or above it are rejected (a multiple of len(alphabet))
	spec     contract.GenerateSpec
}

func newDrawer(alphabet []rune, spec contract.GenerateSpec) *drawer {
	return &drawer{src: bufio.NewReaderSize(rand.Reader, 64<<10), alphabet: alphabet,
		limit: 256 - 256%len(alphabet), spec: spec}
}

func (d *drawer) code() (string, error) {
	var b strings.Builder
	b.Grow(len(d.spec.Prefix) + d.spec.Length*utf8.UTFMax + len(d.spec.Suffix))
	b.WriteString(d.spec.Prefix)
	for n := 0; n < d.spec.Length; {
		c, err := d.src.ReadByte()
		if err != nil {
			return "", fmt.Errorf("read random: %w", err)
		}
		if int(c) >= d.limit {
			continue
		}
		b.WriteRune(d.alphabet[int(c)%len(d.alphabet)])
		n++
	}
	b.WriteString(d.spec.Suffix)
	return b.String(), nil
}
