package console

import "fmt"

// Role is what an account may do in the console. Each role may do everything the roles before
// it may:
//
//   - viewer reads everything: projects, statistics, API keys (never a secret), codes and their
//     history, the admin audit log;
//   - support also fixes single codes: manual verify and reactivate (with a reason), disable
//     and enable a code;
//   - operator also runs campaigns: projects (create, enable, disable, expiry), API keys
//     (create, revoke, limit), code generation, import and export;
//   - admin also manages the console's accounts.
//
// A route declares the least role it needs (see routes.go); an account below it gets 403.
type Role string

// The roles, from least to most.
const (
	RoleViewer   Role = "viewer"
	RoleSupport  Role = "support"
	RoleOperator Role = "operator"
	RoleAdmin    Role = "admin"
)

// rank orders the roles, a role allowing what every role of a lower rank allows; 0 is no role.
func (r Role) rank() int {
	switch r {
	case RoleViewer:
		return 1
	case RoleSupport:
		return 2
	case RoleOperator:
		return 3
	case RoleAdmin:
		return 4
	}
	return 0
}

// ParseRole reads a role's name.
func ParseRole(s string) (Role, error) {
	r := Role(s)
	if r.rank() == 0 {
		return "", fmt.Errorf("unknown role %q: viewer, support, operator or admin", s)
	}
	return r, nil
}

// Allows tells whether an account of role r may do what needs role need. An unknown role (a
// row edited by hand) allows nothing.
func (r Role) Allows(need Role) bool {
	return r.rank() > 0 && need.rank() > 0 && r.rank() >= need.rank()
}
