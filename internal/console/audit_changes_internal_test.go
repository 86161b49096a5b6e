package console

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/acv/acv/api/contract"
)

// TestDescribeAudit: an audit entry's detail reads as what changed (before → after) and the
// facts beside it, never as JSON; times as dates, empty options left out.
func TestDescribeAudit(t *testing.T) {
	rec := func(action, detail string) contract.AuditRecord {
		return contract.AuditRecord{Action: action, Detail: json.RawMessage(detail)}
	}
	cases := []struct {
		r              contract.AuditRecord
		changes, facts []auditChange
	}{
		{rec("project.disable", "null"), []auditChange{{"status", "active", "disabled"}}, nil},
		{rec("account.role", `{"from":"viewer","to":"operator","username":"vera"}`),
			[]auditChange{{"role", "viewer", "operator"}}, []auditChange{{"username", "", "vera"}}},
		{rec("project.expire", `{"expires_at":1927684800}`), []auditChange{{"expires_at", "", "2031-02-01 04:00 UTC"}}, nil},
		{rec("codes.generate", `{"name":"Spring","prefix":"","requested":100000}`), nil,
			[]auditChange{{"name", "", "Spring"}, {"requested", "", "100,000"}}},
	}
	for _, c := range cases {
		d := describeAudit(c.r)
		if !reflect.DeepEqual(d.Changes, c.changes) || !reflect.DeepEqual(d.Facts, c.facts) {
			t.Errorf("%s %s: changes %v facts %v; want %v and %v", c.r.Action, c.r.Detail, d.Changes, d.Facts, c.changes, c.facts)
		}
	}
}
