package store_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// seqRow is a code's ordering columns as stored.
type seqRow struct {
	Seq       int64
	CreatedAt time.Time
	ID        string
	Code      string
}

// seqRows reads a project's codes in seq order, straight from the table.
func seqRows(t *testing.T, pool *pgxpool.Pool, projectID string) []seqRow {
	t.Helper()
	rows, err := pool.Query(testCtx(t),
		`SELECT seq, created_at, id, code FROM codes WHERE project_id = $1 ORDER BY seq`, projectID)
	if err != nil {
		t.Fatalf("read seq: %v", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (seqRow, error) {
		var (
			s  seqRow
			id pgtype.UUID
		)
		err := r.Scan(&s.Seq, &s.CreatedAt, &id, &s.Code)
		s.ID = fmt.Sprintf("%x", id.Bytes)
		return s, err
	})
	if err != nil {
		t.Fatalf("read seq: %v", err)
	}
	return out
}

// checkSeq asserts that a project's codes are numbered exactly 1..n, that projects.code_seq is n,
// and that seq order is the contract's order: created_at, then id, ascending.
func checkSeq(t *testing.T, pool *pgxpool.Pool, projectID string) []seqRow {
	t.Helper()
	rows := seqRows(t, pool, projectID)
	for i, r := range rows {
		if r.Seq != int64(i+1) {
			t.Fatalf("code %d of %d (%s) has seq %d", i+1, len(rows), r.Code, r.Seq)
		}
		if i > 0 {
			prev := rows[i-1]
			if !(prev.CreatedAt.Before(r.CreatedAt) || prev.CreatedAt.Equal(r.CreatedAt) && prev.ID < r.ID) {
				t.Fatalf("seq %d (%v, %s) does not follow seq %d (%v, %s) in created_at, id order",
					r.Seq, r.CreatedAt, r.ID, prev.Seq, prev.CreatedAt, prev.ID)
			}
		}
	}
	var top int64
	if err := pool.QueryRow(testCtx(t), `SELECT code_seq FROM projects WHERE id = $1`, projectID).Scan(&top); err != nil {
		t.Fatalf("read code_seq: %v", err)
	}
	if top != int64(len(rows)) {
		t.Fatalf("code_seq %d, %d codes", top, len(rows))
	}
	return rows
}

// checkPages lists every page of the unfiltered list (and one past the end) at several page
// sizes and compares each with the OFFSET query over the contract's order.
func checkPages(t *testing.T, s *store.Store, projectID string, sizes ...int) {
	t.Helper()
	ctx := testCtx(t)
	now := time.Now().Unix()
	var n int64
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM codes WHERE project_id = $1`, projectID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	for _, size := range sizes {
		pages := int((n + int64(size) - 1) / int64(size))
		for page := 1; page <= pages+1; page++ {
			got, total, err := s.ListCodes(ctx, projectID, contract.ListQuery{Page: page, PageSize: size}, now)
			if err != nil {
				t.Fatalf("list page %d size %d: %v", page, size, err)
			}
			if total != n {
				t.Fatalf("page %d size %d: total %d, want %d", page, size, total, n)
			}
			rows, err := s.Pool().Query(ctx, `SELECT id FROM codes WHERE project_id = $1
				ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`, projectID, size, (page-1)*size)
			if err != nil {
				t.Fatal(err)
			}
			want, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
				var id pgtype.UUID
				err := r.Scan(&id)
				return fmt.Sprintf("%x", id.Bytes), err
			})
			if err != nil {
				t.Fatal(err)
			}
			ids := make([]string, len(got))
			for i, r := range got {
				ids[i] = r.ID
			}
			if !slices.Equal(ids, want) {
				t.Fatalf("page %d size %d: got %q, want %q", page, size, ids, want)
			}
		}
	}
}

// TestInsertCodesConcurrentSeq inserts overlapping values into one project from several
// goroutines at once: every value lands once, numbered 1..N without gap or repeat in the
// contract's order, and the list pages through exactly that order.
func TestInsertCodesConcurrentSeq(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	p := mustProject(t, s, nil)
	other := mustProject(t, s, nil)

	const (
		workers = 6
		batches = 8
		pool    = 3000
	)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		returned = map[string]string{} // value -> id, from every call's result
		errs     []error
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for b := 0; b < batches; b++ {
				project := p.ID
				if b%4 == 3 {
					project = other.ID
				}
				size := 50 + r.IntN(400)
				in := make([]contract.NewCode, size)
				for i := range in {
					in[i] = contract.NewCode{Code: fmt.Sprintf("V-%04d", r.IntN(pool))}
				}
				rows, err := s.InsertCodes(ctx, project, in)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				}
				for _, row := range rows {
					key := project + "/" + row.Code
					if id, dup := returned[key]; dup {
						errs = append(errs, fmt.Errorf("value %s returned twice (%s, %s)", key, id, row.ID))
					}
					returned[key] = row.ID
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}

	for _, proj := range []string{p.ID, other.ID} {
		rows := checkSeq(t, s.Pool(), proj)
		n := 0
		for key := range returned {
			if key[:len(proj)] == proj {
				n++
			}
		}
		if len(rows) != n {
			t.Fatalf("project holds %d codes, InsertCodes returned %d", len(rows), n)
		}
		for _, r := range rows {
			if returned[proj+"/"+r.Code] != r.ID {
				t.Fatalf("stored %s as %s, InsertCodes returned %s", r.Code, r.ID, returned[proj+"/"+r.Code])
			}
		}
		checkPages(t, s, proj, 13, 100)
		checkStats(t, s, proj, time.Now().Unix(), contract.Statistics{TotalCodes: int64(n), UnusedCodes: int64(n)})
	}
}

// TestListDeepPages compares every page of a few thousand codes, inserted in batches of mixed
// sizes with collisions, by plain SQL (numbered by the trigger) and by InsertCodes, with the
// OFFSET reference; and checks filtered lists still page in the same order.
func TestListDeepPages(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	now := time.Now().Unix()
	p := mustProject(t, s, ptr(now+100))
	mustInsert(t, s, mustProject(t, s, nil).ID, values("D-00001", "D-00002")...) // another project's

	r := rand.New(rand.NewPCG(3, 4))
	var all []contract.CodeRecord
	for b := 0; b < 12; b++ {
		size := []int{1, 7, 250, 900}[b%4]
		in := make([]contract.NewCode, size)
		for i := range in {
			in[i] = contract.NewCode{Code: fmt.Sprintf("D-%05d", r.IntN(6000))}
			if i%5 == 0 {
				in[i].ExpiresAt = ptr(now + int64(r.IntN(200)) - 100)
			}
		}
		all = append(all, mustInsert(t, s, p.ID, in...)...)
		if b == 5 {
			// A row written outside InsertCodes, and one refused: a value the project holds
			// (it must take no sequence number).
			if _, err := s.Pool().Exec(ctx, `INSERT INTO codes (id, project_id, code) VALUES ($1, $2, 'raw-1')`,
				contract.NewID(), p.ID); err != nil {
				t.Fatalf("raw insert: %v", err)
			}
			if _, err := s.Pool().Exec(ctx, `INSERT INTO codes (id, project_id, code) VALUES ($1, $2, $3)`,
				contract.NewID(), p.ID, all[0].Code); err == nil {
				t.Fatal("raw insert of a value the project holds succeeded")
			}
		}
	}
	if len(all) < 2000 {
		t.Fatalf("fixture has only %d codes", len(all))
	}
	for i := 0; i < len(all); i += 9 {
		snap := contract.CodeRecord{ID: all[i].ID, Version: 1}
		switch i % 4 {
		case 0:
			snap.Disabled = true
		case 1:
			snap.VerifiedAtMs = now * 1000
		}
		if err := s.ApplySnapshot(ctx, snap); err != nil {
			t.Fatal(err)
		}
	}
	checkSeq(t, s.Pool(), p.ID)
	checkPages(t, s, p.ID, 3, 20, 100, 999)

	// Filtered lists: the same order, restricted to the matching codes.
	var stored []contract.CodeRecord
	if err := s.ExportCodes(ctx, p.ID, func(r contract.CodeRecord) error { stored = append(stored, r); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.Reverse(stored)
	for _, st := range []contract.State{contract.StateUnused, contract.StateUsed, contract.StateDisabled, contract.StateExpired} {
		var want, got []string
		for _, r := range stored {
			c := r.Resource(p.ExpiresAt, now)
			if contract.DeriveState(c.IsDisabled, c.VerifiedAt != nil, contract.EffectiveExpiry(c.ExpiresAt, p.ExpiresAt), now) == st {
				want = append(want, r.ID)
			}
		}
		for page := 1; ; page++ {
			rows, total, err := s.ListCodes(ctx, p.ID, contract.ListQuery{State: st, Page: page, PageSize: 50}, now)
			if err != nil || total != int64(len(want)) {
				t.Fatalf("%s page %d: total %d, want %d, err %v", st, page, total, len(want), err)
			}
			for _, r := range rows {
				got = append(got, r.ID)
			}
			if len(rows) < 50 {
				break
			}
		}
		if !slices.Equal(got, want) || len(want) == 0 {
			t.Errorf("%s: listed %d codes, want %d in the same order", st, len(got), len(want))
		}
	}
}

// TestRawInsertNumbered covers rows written by SQL outside InsertCodes: the trigger numbers
// them, a rejected duplicate takes no number, and an unknown project is a
// foreign-key violation as before.
func TestRawInsertNumbered(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	p := mustProject(t, s, nil)
	mustInsert(t, s, p.ID, values("a", "b")...)

	// A value the project holds, or one the statement holds twice, fails the whole statement
	// (the unique key is on code_values, filled by the statement's trigger).
	_, err := s.Pool().Exec(ctx, `INSERT INTO codes (id, project_id, code) VALUES ($1, $2, 'a')`, contract.NewID(), p.ID)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" || pgErr.ConstraintName != "code_values_project_code_key" {
		t.Fatalf("duplicate raw insert: %v", err)
	}
	_, err = s.Pool().Exec(ctx, `INSERT INTO codes (id, project_id, code) VALUES ($1, $3, 'c'), ($2, $3, 'c')`,
		contract.NewID(), contract.NewID(), p.ID)
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" || pgErr.ConstraintName != "code_values_project_code_key" {
		t.Fatalf("raw insert of a value twice: %v", err)
	}
	tag, err := s.Pool().Exec(ctx, `INSERT INTO codes (id, project_id, code) VALUES ($1, $2, 'c')`, contract.NewID(), p.ID)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("raw insert: %v, %d rows", err, tag.RowsAffected())
	}
	_, err = s.Pool().Exec(ctx, `INSERT INTO codes (id, project_id, code) VALUES ($1, $2, 'x')`, contract.NewID(), contract.NewID())
	if !errors.As(err, &pgErr) || pgErr.Code != "23503" {
		t.Fatalf("raw insert into unknown project: %v", err)
	}
	_, err = s.InsertCodes(ctx, contract.NewID(), values("x"))
	wantNotFound(t, "InsertCodes into unknown project", err)
	mustInsert(t, s, p.ID, values("c", "d")...)
	rows := checkSeq(t, s.Pool(), p.ID)
	var got []string
	for _, r := range rows {
		got = append(got, r.Code)
	}
	if want := []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Fatalf("codes in seq order %q, want %q", got, want)
	}
	checkStats(t, s, p.ID, time.Now().Unix(), contract.Statistics{TotalCodes: 4, UnusedCodes: 4})
}

// TestSeqAssignLooksUpValuesByIndex: a code inserted without a seq (a row-by-row import) is
// checked against its project's values through code_values' key, not by walking the project's
// codes (which hold no key on the value).
func TestSeqAssignLooksUpValuesByIndex(t *testing.T) {
	s := newStore(t)
	ctx := testCtx(t)
	p := mustProject(t, s, nil)
	insertNumbered(t, s, p.ID, "SA", 20_000)
	if err := s.AfterBulkLoad(ctx); err != nil {
		t.Fatal(err)
	}
	conn, plans := explainSession(t, s)
	var seq int64
	if err := conn.QueryRow(ctx, `INSERT INTO codes (id, project_id, code) VALUES ($1, $2, 'SA-NEW') RETURNING seq`,
		contract.NewID(), p.ID).Scan(&seq); err != nil || seq != 20_001 {
		t.Fatalf("row insert: seq %d, %v; want 20001", seq, err)
	}
	found := false
	for _, doc := range plans() {
		if !strings.Contains(doc.Query, "code = NEW.code") {
			continue
		}
		found = true
		if doc.Plan.readsRelation("codes") || !doc.Plan.usesIndex("code_values_project_code_key") {
			t.Errorf("the value is not looked up through code_values_project_code_key:\n%s", doc.Text)
		}
	}
	if !found {
		t.Fatal("no plan of code_seq_assign's value lookup")
	}
}
