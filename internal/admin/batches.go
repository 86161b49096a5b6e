package admin

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/acv/acv/internal/plural"

	"github.com/acv/acv/api/contract"
)

// A running batch's instance refreshes its heartbeat every BatchHeartbeat; a batch whose
// heartbeat is older than BatchStaleAfter lost its instance.
const (
	BatchHeartbeat  = 2 * time.Second
	BatchStaleAfter = 30 * time.Second
)

// errCancelled is the cause of a batch's context when an operator cancelled it.
var errCancelled = errors.New("cancelled by an operator")

// CreateBatch checks spec and records a queued batch, which RunBatch then generates.
func (a *Admin) CreateBatch(ctx context.Context, projectID, name string, spec contract.GenerateSpec, createdBy string) (contract.Batch, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return contract.Batch{}, contract.Errorf(contract.KindInvalid, "a batch needs a name")
	}
	if err := contract.ValidateText("name", name, 200); err != nil {
		return contract.Batch{}, contract.Errorf(contract.KindInvalid, "%v", err)
	}
	if err := checkSpec(&spec); err != nil {
		return contract.Batch{}, err
	}
	if _, err := a.Store.Project(ctx, projectID); err != nil {
		return contract.Batch{}, notFound(err, "project", projectID)
	}
	charset := spec.Charset
	if charset == DefaultCharset {
		charset = ""
	}
	b, err := a.Store.CreateBatch(ctx, contract.NewBatch{ProjectID: projectID, Name: name, Requested: spec.Count,
		CreatedBy: createdBy, Spec: contract.BatchSpec{Length: spec.Length, Charset: charset, Prefix: spec.Prefix,
			Suffix: spec.Suffix, ExpiresAt: spec.ExpiresAt}})
	return b, notFound(err, "project", projectID)
}

// RunBatch generates a queued batch's codes, writing progress every step codes and a heartbeat
// every BatchHeartbeat (a cancel stops it at the next), and returns the batch as it ended.
func (a *Admin) RunBatch(ctx context.Context, projectID, batchID string, step int) (contract.Batch, error) {
	b, err := a.Store.Batch(ctx, projectID, batchID)
	if err != nil {
		return contract.Batch{}, notFound(err, "batch", batchID)
	}
	started, err := a.Store.StartBatch(ctx, batchID)
	if err != nil || !started {
		if err == nil {
			b, err = a.Store.Batch(ctx, projectID, batchID)
		}
		return b, err
	}
	jctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopOn := func(c bool, err error) {
		if err == nil && c {
			cancel(errCancelled)
		}
	}
	beat, stopBeat := context.WithCancel(jctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(BatchHeartbeat)
		defer t.Stop()
		for {
			select {
			case <-beat.Done():
				return
			case <-t.C:
				stopOn(a.Store.BatchHeartbeat(jctx, batchID))
			}
		}
	})
	spec := contract.GenerateSpec{Count: b.Requested, Length: b.Spec.Length, Charset: b.Spec.Charset, Prefix: b.Spec.Prefix,
		Suffix: b.Spec.Suffix, ExpiresAt: b.Spec.ExpiresAt, Step: step}
	n, gerr := a.generateInto(jctx, projectID, batchID, spec, func(done int) { stopOn(a.Store.BatchProgress(jctx, batchID, done)) })
	stopBeat()
	wg.Wait()

	status, text := contract.BatchDone, ""
	switch {
	case gerr == nil:
	case errors.Is(context.Cause(jctx), errCancelled):
		status, gerr = contract.BatchCancelled, nil
	case ctx.Err() != nil:
		status, text = contract.BatchFailed, "interrupted: the console instance running it stopped"
	default:
		status, text = contract.BatchFailed, failureText(gerr)
	}
	// The end is written even during a shutdown, so the batch does not wait to be found stale.
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer fcancel()
	if err := a.Store.FinishBatch(fctx, batchID, status, n, text); err != nil {
		return b, errors.Join(gerr, err)
	}
	b, err = a.Store.Batch(fctx, projectID, batchID)
	if err != nil {
		return b, errors.Join(gerr, err)
	}
	return b, gerr
}

// Batch reads one batch of a project, marking stale ones failed first.
func (a *Admin) Batch(ctx context.Context, projectID, batchID string) (contract.Batch, error) {
	if _, err := a.Store.FailStaleBatches(ctx, projectID, BatchStaleAfter); err != nil {
		return contract.Batch{}, notFound(err, "project", projectID)
	}
	b, err := a.Store.Batch(ctx, projectID, batchID)
	return b, notFound(err, "batch", batchID)
}

// Batches lists a project's batches, newest first, at most limit ([] when none), marking stale
// ones failed first.
func (a *Admin) Batches(ctx context.Context, projectID string, limit int) ([]contract.Batch, error) {
	if _, err := a.Store.Project(ctx, projectID); err != nil {
		return nil, notFound(err, "project", projectID)
	}
	if _, err := a.Store.FailStaleBatches(ctx, projectID, BatchStaleAfter); err != nil {
		return nil, err
	}
	bs, err := a.Store.Batches(ctx, projectID, limit)
	return orEmpty(bs), err
}

// CancelBatch asks a batch to stop; the codes it made stay (RevokeBatch disables them).
func (a *Admin) CancelBatch(ctx context.Context, projectID, batchID string) (contract.Batch, error) {
	b, err := a.Store.RequestBatchCancel(ctx, projectID, batchID)
	return b, notFound(err, "batch", batchID)
}

// RevokeBatch disables every code a batch made and marks it revoked by by; with expected, only
// while that is the count (else contract.ErrCountChanged). A batch still generating is refused.
func (a *Admin) RevokeBatch(ctx context.Context, projectID, batchID, by string, expected *int64, now int64) (int, error) {
	b, err := a.Batch(ctx, projectID, batchID)
	if err != nil {
		return 0, err
	}
	if !b.Final() {
		return 0, contract.Errorf(contract.KindConflict, "Batch %s is still %s: cancel it first", b.Name, b.Status)
	}
	n, err := a.DisableMatching(ctx, projectID, contract.CodeFilter{BatchID: batchID}, expected, now)
	if err != nil {
		return n, err
	}
	if err := a.Store.MarkBatchRevoked(ctx, batchID, by); err != nil {
		return n, fmt.Errorf("batch %s: %s disabled: %w", batchID, plural.N(n, "code", "codes"), err)
	}
	return n, nil
}

// failureText is what a failed batch shows: a refusal's own message, else a sentence naming no
// internals (RunBatch returns the cause to be logged).
func failureText(err error) string {
	var ce *contract.Error
	if errors.As(err, &ce) && ce.Kind != contract.KindInternal && ce.Kind != contract.KindUnavailable {
		return ce.Message
	}
	if contract.KindOf(err) == contract.KindUnavailable {
		return "a store was unavailable; the codes made so far are kept"
	}
	return "an internal error stopped it (the console's log has the cause); the codes made so far are kept"
}

// DefaultCharset has no look-alike characters (no 0/O, 1/I/L).
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

// Generate creates spec.Count new codes unique within the project, telling progress (if any).
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
		rows, err := l.insertRows(ctx, batch)
		if err != nil {
			return done, err
		}
		n := len(rows)
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

// loader writes batches of new codes to Postgres and, one batch behind, to Redis; a code not
// yet in Redis is served all the same (the hot path loads it on first use).
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

// insertRows writes codes to Postgres and queues the rows inserted (the new ones) for Redis.
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

// drawer draws uniform random code values from crypto/rand, by rejection sampling.
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
