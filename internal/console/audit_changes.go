package console

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
)

// auditChange is one field an audited action changed, as the audit page shows it:
// Before → After ("" when the entry does not say).
type auditChange struct {
	Field, Before, After string
}

// auditDetail is an audit entry's detail as a person reads it: what changed, then the
// other facts recorded with it (field: value).
type auditDetail struct {
	Changes []auditChange
	Facts   []auditChange // Before unused
}

// impliedChanges are the changes an action itself says, its detail aside: disabling a project
// changes its status from active to disabled.
var impliedChanges = map[string]auditChange{
	"project.enable":         {"status", "disabled", "active"},
	"project.disable":        {"status", "active", "disabled"},
	"account.disable":        {"state", "active", "disabled"},
	"account.enable":         {"state", "disabled", "active"},
	"code.disable":           {"state", "enabled", "disabled"},
	"code.enable":            {"state", "disabled", "enabled"},
	"api_key.revoke":         {"state", "active", "revoked"},
	"project.clear_expiry":   {"expires_at", "set", "never"},
	"batch.revoke":           {"codes", "enabled", "disabled"},
	"codes.bulk_disable":     {"codes", "enabled", "disabled"},
	"account.reset_password": {"password", "set", "one-time password"},
}

// describeAudit turns an entry's canonical JSON detail into changes and facts: a from/to
// pair is one change, a time in Unix seconds (a field named *_at, from, to, before) is written
// as a date.
func describeAudit(r contract.AuditRecord) auditDetail {
	var d auditDetail
	if c, ok := impliedChanges[r.Action]; ok {
		d.Changes = append(d.Changes, c)
	}
	var m map[string]any
	if len(r.Detail) == 0 || json.Unmarshal(r.Detail, &m) != nil {
		if len(r.Detail) > 0 && string(r.Detail) != "null" {
			d.Facts = append(d.Facts, auditChange{Field: "detail", After: string(r.Detail)})
		}
		return d
	}
	if from, ok := m["from"]; ok {
		if to, ok := m["to"]; ok && !strings.Contains(r.Action, "export") {
			field := "value"
			if r.Action == "account.role" {
				field = "role"
			}
			d.Changes = append(d.Changes, auditChange{field, auditValue("", from), auditValue("", to)})
			delete(m, "from")
			delete(m, "to")
		}
	}
	if r.Action == "project.expire" {
		d.Changes = append(d.Changes, auditChange{"expires_at", "", auditValue("expires_at", m["expires_at"])})
		delete(m, "expires_at")
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if m[k] == "" {
			continue // an option left empty says nothing
		}
		d.Facts = append(d.Facts, auditChange{Field: strings.ReplaceAll(k, "_", " "), After: auditValue(k, m[k])})
	}
	return d
}

// auditValue writes one detail value: times as UTC dates, numbers without exponents, null as
// "none".
func auditValue(key string, v any) string {
	switch t := v.(type) {
	case nil:
		return "none"
	case float64:
		if key == "from" || key == "to" || key == "before" || strings.HasSuffix(key, "_at") {
			return time.Unix(int64(t), 0).UTC().Format("2006-01-02 15:04 UTC")
		}
		if t == float64(int64(t)) {
			return thousands(int64(t))
		}
		return fmt.Sprint(t)
	case bool:
		if t {
			return "yes"
		}
		return "no"
	case string:
		return t
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// auditTargetName is the name a person knows an entry's target by: a project's name, an
// account's username, a code's value (its id is the value); "" when the entry holds only an id.
func auditTargetName(r contract.AuditRecord, projects map[string]string) string {
	switch r.TargetKind {
	case "project":
		return projects[r.TargetID]
	case "code":
		return r.TargetID
	case "batch":
		var m struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(r.Detail, &m) == nil {
			return m.Name
		}
	case "admin":
		var m struct {
			Username string `json:"username"`
		}
		if json.Unmarshal(r.Detail, &m) == nil && m.Username != "" {
			return m.Username
		}
		if r.TargetID == r.AdminID {
			return r.AdminUsername
		}
	}
	return ""
}
