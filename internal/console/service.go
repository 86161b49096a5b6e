// Package console is the operator console: accounts with roles, sessions, CSRF protection, the
// admin audit log, and the admin HTTP API (JSON under /admin/api/v1) on a listener of its own
// (ACV_ADMIN_ADDR). Its operator actions are internal/admin's; the console adds who may do
// them, and the record of who did. The acv command is a client of this API (API tokens,
// tokens.go), so a change made from the command line is checked and recorded alike.
//
// Two layers: Service (this file and the service files beside it) performs an action for an
// Actor, checks the actor's role and records the action in the audit log; Server (server.go
// and the api_*.go files) is the HTTP adapter: cookies, CSRF, JSON bodies and statuses. Server-
// rendered pages (pages*.go, templates in web/) call the same Service methods.
//
// It imports api/contract, pure helpers and the embedded documents (api, docs), nothing else of
// the project: the record and the admin service are the Store and Operations interfaces
// declared in ports.go, which the wiring (internal/service, cmd/acv) fills with *store.Store and
// *admin.Admin; manual verify and reactivate go through HotPath (*cache.Cache).
package console

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/acv/acv/api/contract"
)

// HotPath is what manual verify and reactivate need of the Redis hot path: the calls the
// client API makes, so a code redeemed by hand goes through the same checks, transition and
// verification-log event.
type HotPath interface {
	Verify(ctx context.Context, op contract.Operation) (contract.OperationResult, error)
	Reactivate(ctx context.Context, op contract.Operation) (contract.OperationResult, error)
}

// Config wires a Service. Store is required; Admin is needed by every action on projects, keys
// and codes (account management, login and the audit log need only Store), HotPath by manual
// verify and reactivate.
type Config struct {
	Store   Store
	Admin   Operations
	HotPath HotPath
	// Logger receives what the console logs; slog.Default() when nil.
	Logger *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Passwords is the argon2id cost of new password hashes; DefaultPasswordParams when zero.
	Passwords PasswordParams
	// Throttle bounds password guessing; a field left zero is DefaultThrottle's.
	Throttle ThrottlePolicy
	// Sessions bounds the sessions' lifetime; DefaultSessionPolicy when zero.
	Sessions SessionPolicy
	// GenerateStep is how many codes a round of a generation batch inserts, and so how often
	// its progress moves; 10,000 when 0.
	GenerateStep int
	// Outbox reads the log pipeline's backlog for the dashboard; the backlog is not shown
	// when nil.
	Outbox OutboxReader
	// Relays counts the relays alive for the dashboard; not shown when nil.
	Relays RelayCounter
	// LogPolicy is the verification-log partitions' policy a maintenance run through the API
	// applies; contract.DefaultLogPolicy() when zero.
	LogPolicy contract.LogPolicy
}

// Service performs the console's actions for an Actor: it checks the actor's role, runs the
// action, and records it in the admin audit log.
type Service struct {
	cfg   Config
	store Store
	admin Operations
	hot   HotPath
	log   *slog.Logger
	now   func() time.Time
	jobs  *jobs
	// dummyHash is checked against the password of a login naming no account, so such a
	// login takes as long as one naming an account.
	dummyHash string
}

// NewService builds a Service over cfg.
func NewService(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("console: Store is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Passwords == (PasswordParams{}) {
		cfg.Passwords = DefaultPasswordParams()
	}
	cfg.Throttle = cfg.Throttle.withDefaults()
	if cfg.Sessions == (SessionPolicy{}) {
		cfg.Sessions = DefaultSessionPolicy()
	}
	dummy, err := HashPassword(cfg.Passwords, "no account has this password")
	if err != nil {
		return nil, err
	}
	return &Service{cfg: cfg, store: cfg.Store, admin: cfg.Admin, hot: cfg.HotPath, log: cfg.Logger, now: cfg.Now,
		jobs: newJobs(), dummyHash: dummy}, nil
}

// Close stops the generation batches still running on this instance and waits for them to
// record that they were interrupted. The Server's Serve calls it when it ends.
func (s *Service) Close() { s.jobs.close() }

// Actor is who performs an action, and from where: the account of a session, or the acv
// command (SystemActor).
type Actor struct {
	AdminID  string // "" for SystemActor
	Username string
	Role     Role
	IP       string // client address, through trusted proxies only; "" for the command line
}

// SystemActor is acv migrate or acv dev making the first account, run on a server by someone
// who holds its database URL: already able to do anything, so it acts as an admin. name says
// who, for the audit log (e.g. "acv migrate").
func SystemActor(name string) Actor { return Actor{Username: name, Role: RoleAdmin} }

// errNoOperatorActions: the Service was built without the admin service (Config.Admin).
var errNoOperatorActions = errors.New("console: operator actions are not configured (no admin service)")

// require refuses an actor whose role is below need, with the 403 the API answers.
func (a Actor) require(need Role) error {
	if !a.Role.Allows(need) {
		return contract.Errorf(contract.KindForbidden, "This needs the %s role; your account has the %s role", need, a.Role)
	}
	return nil
}

// operator checks the actor's role and that the operator actions are configured.
func (s *Service) operator(a Actor, need Role) (Operations, error) {
	if err := a.require(need); err != nil {
		return nil, err
	}
	if s.admin == nil {
		return nil, errNoOperatorActions
	}
	return s.admin, nil
}
