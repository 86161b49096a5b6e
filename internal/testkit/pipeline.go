package testkit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/acv/acv/audit"
	"github.com/acv/acv/cache"
)

// The audit pipeline is asynchronous; these read its end state in SQL, as an operator would,
// independently of the API's own reads.

// countLogs counts the verification logs whose column (code_id or project_id) is id.
func (s *Stack) countLogs(column, id string) (int, error) {
	var n int
	err := s.Deps.Store.Pool().QueryRow(context.Background(),
		"SELECT count(*) FROM verification_logs WHERE "+column+" = $1", id).Scan(&n)
	return n, err
}

func (s *Stack) mustCount(t testing.TB, column, id string) int {
	t.Helper()
	n, err := s.countLogs(column, id)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// LogCount counts the verification logs of a code in PostgreSQL.
func (s *Stack) LogCount(codeID string) int {
	s.T.Helper()
	return s.mustCount(s.T, "code_id", codeID)
}

// ProjectLogs counts the verification logs of a project in PostgreSQL, failing t (a subtest)
// when the query fails.
func (s *Stack) ProjectLogs(t testing.TB, projectID string) int {
	t.Helper()
	return s.mustCount(t, "project_id", projectID)
}

// OutboxEmpty reports whether every outbox is drained; a WaitFor condition.
func (s *Stack) OutboxEmpty() (bool, string) {
	n, _, err := audit.OutboxLen(context.Background(), s.Deps.Redis, cache.Outboxes())
	if err != nil {
		return false, err.Error()
	}
	return n == 0, fmt.Sprintf("%d entries in the outbox", n)
}

// WaitDrained waits until PostgreSQL holds exactly n verification logs of the project and the
// outbox is empty: the pipeline has delivered everything acknowledged so far, and no more.
func (s *Stack) WaitDrained(t testing.TB, projectID string, n int, within time.Duration) {
	t.Helper()
	WaitFor(t, within, fmt.Sprintf("the pipeline to deliver %d logs and drain", n), func() (bool, string) {
		got, err := s.countLogs("project_id", projectID)
		if err != nil {
			return false, err.Error()
		}
		if got != n {
			return false, fmt.Sprintf("%d of %d logs", got, n)
		}
		return s.OutboxEmpty()
	})
}

// CodeID is the id of a code value in a project, read from PostgreSQL.
func (s *Stack) CodeID(t testing.TB, projectID, value string) string {
	t.Helper()
	row, err := s.Deps.Store.CodeByValue(context.Background(), projectID, value)
	if err != nil {
		t.Fatalf("code %q: %v", value, err)
	}
	return row.ID
}

// WaitLogs waits until the pipeline delivered n logs of a code and fails when it holds more.
// Events of one code share a Kafka partition, so when the n-th arrived every earlier one did.
func (s *Stack) WaitLogs(t testing.TB, codeID string, n int) {
	t.Helper()
	WaitFor(t, 30*time.Second, "verification logs in postgres", func() (bool, string) {
		got := s.mustCount(t, "code_id", codeID)
		return got >= n, fmt.Sprintf("%d of %d logs", got, n)
	})
	if got := s.mustCount(t, "code_id", codeID); got != n {
		t.Fatalf("code %s has %d verification logs, want %d", codeID, got, n)
	}
}
