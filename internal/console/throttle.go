package console

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/acv/acv/api/contract"
)

// ThrottlePolicy bounds password guessing. Every password check is counted before it is made
// (ThrottlePolicy.limits), against three subjects:
//
//   - a username from one client address: PairFailures failures within Window lock the pair
//     for BaseLock, doubled for each failure past the threshold, up to MaxLock. The lock stops
//     that address only: whoever guesses at an account from one place does not lock its owner
//     out elsewhere.
//   - a client address: IPFailures failures within Window, over any usernames, lock the
//     address the same way (one address spraying guesses over many accounts).
//   - a username from anywhere: past AccountFailures failures within Window its password is
//     checked at most once per AccountSpacing. This slows guesses spread over many addresses
//     without ever locking the account: a refused login waits seconds, not minutes.
//
// While a subject is locked (or its next check is not due) every login of it is refused at
// once (429), without looking at the password. Usernames are counted whether or not an
// account has them, so a refusal tells nothing about which accounts exist. A right password
// gives its attempt back and clears its pair.
type ThrottlePolicy struct {
	PairFailures    int           // failures of one username from one address that lock the pair
	IPFailures      int           // failures from one address that lock it (higher: offices share one)
	AccountFailures int           // failures of one username from anywhere past which its checks are spaced
	AccountSpacing  time.Duration // the least time between two checks of such a username's password
	Window          time.Duration // a failure older than this no longer counts
	BaseLock        time.Duration
	MaxLock         time.Duration
}

// DefaultThrottle: 5 failures of a username from one address, or 20 from one address, within
// 15 minutes lock that pair or address for 30 s, then 1 min, 2 min, … up to an hour; past 10
// failures of a username from anywhere, its password is checked at most once every 2 s.
func DefaultThrottle() ThrottlePolicy {
	return ThrottlePolicy{PairFailures: 5, IPFailures: 20, AccountFailures: 10, AccountSpacing: 2 * time.Second,
		Window: 15 * time.Minute, BaseLock: 30 * time.Second, MaxLock: time.Hour}
}

// withDefaults fills each field left zero from DefaultThrottle.
func (p ThrottlePolicy) withDefaults() ThrottlePolicy {
	d := DefaultThrottle()
	p.PairFailures = orDefault(p.PairFailures, d.PairFailures)
	p.IPFailures = orDefault(p.IPFailures, d.IPFailures)
	p.AccountFailures = orDefault(p.AccountFailures, d.AccountFailures)
	p.AccountSpacing = orDefault(p.AccountSpacing, d.AccountSpacing)
	p.Window = orDefault(p.Window, d.Window)
	p.BaseLock = orDefault(p.BaseLock, d.BaseLock)
	p.MaxLock = orDefault(p.MaxLock, d.MaxLock)
	return p
}

// orDefault is v, or def when v is not positive.
func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// lockFor is how long failures of a subject whose threshold is threshold lock it: nothing
// below the threshold, BaseLock at it, doubled for each failure past it, up to MaxLock.
func (p ThrottlePolicy) lockFor(threshold int) func(failures int) time.Duration {
	return func(failures int) time.Duration {
		if failures < threshold {
			return 0
		}
		d := p.BaseLock
		for i := threshold; i < failures && d < p.MaxLock; i++ {
			d *= 2
		}
		return min(d, p.MaxLock)
	}
}

// spacing is how long a username's failures hold its next password check back: nothing
// below AccountFailures, AccountSpacing from there on, never longer.
func (p ThrottlePolicy) spacing(failures int) time.Duration {
	if failures < p.AccountFailures {
		return 0
	}
	return p.AccountSpacing
}

// limits are the subjects a password check of username from ip counts against, with how
// each locks. Without an address (none known) only the username's subjects count.
func (p ThrottlePolicy) limits(username, ip string) []contract.LoginLimit {
	ls := []contract.LoginLimit{
		{Subject: pairSubject(username, ip), LockFor: p.lockFor(p.PairFailures)},
		{Subject: accountSubject(username), LockFor: p.spacing},
	}
	if ip != "" {
		ls = append(ls, contract.LoginLimit{Subject: ipSubject(ip), LockFor: p.lockFor(p.IPFailures)})
	}
	return ls
}

// usernameHash keeps a username out of the throttle's keys in clear: a password typed into
// the username field by mistake is not stored.
func usernameHash(username string) string {
	h := sha256.Sum256([]byte(username))
	return hex.EncodeToString(h[:])
}

// pairSubject is the throttle's key of a username tried from one client address.
func pairSubject(username, ip string) string { return "pair:" + usernameHash(username) + "@" + ip }

// accountSubject is the throttle's key of a username tried from anywhere.
func accountSubject(username string) string { return "account:" + usernameHash(username) }

// ipSubject is the throttle's key of a client address.
func ipSubject(ip string) string { return "ip:" + ip }

// locked refuses a login while its username from that address, the address, or the
// username's next password check is held back; wait says for how long yet (the Retry-After of
// the answer).
func locked(wait time.Duration) error {
	return &contract.Error{Kind: contract.KindRateLimited, Message: "Too many failed logins; try again later", Wait: wait}
}

// attempt is one password check the throttle let through: counted as a failure until
// succeeded says otherwise.
type attempt struct {
	username, ip string
	reservation  contract.LoginReservation
}

// reserveAttempt counts a password check of username from ip before it is made, or refuses
// it with a lock (KindRateLimited) while one of its subjects is locked. Counting first is what bounds
// parallel guesses: each one takes its place in the count (in PostgreSQL, shared by every
// console instance) before hashing, so no more checks run than the thresholds allow.
func (s *Service) reserveAttempt(ctx context.Context, username, ip string) (*attempt, error) {
	p := s.cfg.Throttle
	now := s.now()
	r, until, ok, err := s.store.ReserveLoginAttempt(ctx, p.limits(username, ip), now, p.Window)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, locked(until.Sub(now))
	}
	return &attempt{username: username, ip: ip, reservation: r}, nil
}

// succeeded gives back the attempt of a right password and forgets the failures of its
// username from its address; the address's and the username's other failures stay counted.
func (s *Service) succeeded(ctx context.Context, a *attempt) error {
	if err := s.store.RefundLoginAttempt(ctx, a.reservation); err != nil {
		return err
	}
	return s.store.ClearLoginFailures(ctx, pairSubject(a.username, a.ip))
}

// abandoned gives back the attempt of a check that was never made (a failure reading the
// account), so an outage does not count against anyone; a failure to do so is only logged.
func (s *Service) abandoned(ctx context.Context, a *attempt) {
	if err := s.store.RefundLoginAttempt(ctx, a.reservation); err != nil {
		s.log.WarnContext(ctx, "console: give back a login attempt", "err", err)
	}
}
