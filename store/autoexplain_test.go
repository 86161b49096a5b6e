package store_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/acv/acv/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// explainedStatement is one statement's plan as auto_explain reports it in JSON.
type explainedStatement struct {
	Query string   `json:"Query Text"`
	Plan  planNode `json:"Plan"`
	Text  string   `json:"-"`
}

// explainSession opens a connection of its own on which auto_explain reports the plan of every
// statement, those inside functions and triggers included, as notices; plans returns (and
// forgets) the plans reported so far.
func explainSession(t *testing.T, s *store.Store) (conn *pgx.Conn, plans func() []explainedStatement) {
	t.Helper()
	ctx := testCtx(t)
	cfg, err := pgx.ParseConfig(s.Pool().Config().ConnConfig.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		notices []string
	)
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		notices = append(notices, n.Message)
		mu.Unlock()
	}
	conn, err = pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	for _, q := range []string{`LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`,
		`SET auto_explain.log_nested_statements = on`, `SET auto_explain.log_format = json`,
		`SET auto_explain.log_level = notice`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return conn, func() []explainedStatement {
		t.Helper()
		mu.Lock()
		got := notices
		notices = nil
		mu.Unlock()
		var out []explainedStatement
		for _, n := range got {
			_, text, ok := strings.Cut(n, "plan:")
			if !ok {
				continue
			}
			var doc explainedStatement
			if err := json.Unmarshal([]byte(text), &doc); err != nil {
				t.Fatalf("plan notice: %v\n%s", err, n)
			}
			doc.Text = text
			out = append(out, doc)
		}
		return out
	}
}

// planNode is a node of a plan in EXPLAIN's JSON format.
type planNode struct {
	NodeType     string  `json:"Node Type"`
	RelationName string  `json:"Relation Name"`
	IndexName    string  `json:"Index Name"`
	PlanRows     float64 `json:"Plan Rows"`
	// Of EXPLAIN ANALYZE: rows per loop, loops, and rows a filter dropped per loop.
	ActualRows  float64    `json:"Actual Rows"`
	ActualLoops float64    `json:"Actual Loops"`
	Removed     float64    `json:"Rows Removed by Filter"`
	Plans       []planNode `json:"Plans"`
}

// nodes is the plan's nodes, this one first, then its children's, depth first.
func (n planNode) nodes() []planNode {
	out := []planNode{n}
	for _, c := range n.Plans {
		out = append(out, c.nodes()...)
	}
	return out
}

// some reports whether a node of the plan satisfies pred.
func (n planNode) some(pred func(planNode) bool) bool {
	return slices.ContainsFunc(n.nodes(), pred)
}

// visited is how many rows of table rel the analyzed plan read, kept or filtered out.
func (n planNode) visited(rel string) float64 {
	rows := 0.0
	for _, c := range n.nodes() {
		if c.RelationName == rel {
			rows += (c.ActualRows + c.Removed) * c.ActualLoops
		}
	}
	return rows
}

// readsRelation reports whether a node of the plan reads the table rel.
func (n planNode) readsRelation(rel string) bool {
	return n.some(func(c planNode) bool { return c.RelationName == rel })
}

// usesIndex reports whether a node of the plan reads the index idx.
func (n planNode) usesIndex(idx string) bool {
	return n.some(func(c planNode) bool { return c.IndexName == idx })
}

// joins reports whether the plan joins two inputs.
func (n planNode) joins() bool {
	return n.some(func(c planNode) bool { return strings.Contains(c.NodeType, "Join") || c.NodeType == "Nested Loop" })
}

// tuplestoreRows is the largest number of rows the plan expects of a transition table scan.
func (n planNode) tuplestoreRows() float64 {
	rows := 0.0
	for _, c := range n.nodes() {
		if c.NodeType == "Named Tuplestore Scan" {
			rows = max(rows, c.PlanRows)
		}
	}
	return rows
}

// rescans reports whether a nested loop of the plan repeats a transition table's scan for
// every row of its outer side: work that grows with the square of the batch.
func (n planNode) rescans() bool {
	return n.some(func(c planNode) bool {
		if c.NodeType != "Nested Loop" || len(c.Plans) != 2 {
			return false
		}
		inner := c.Plans[1]
		for inner.NodeType == "Materialize" && len(inner.Plans) == 1 {
			inner = inner.Plans[0]
		}
		return inner.NodeType == "Named Tuplestore Scan"
	})
}
