package console

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// ThrottlePolicy bounds failed logins, per username and per client IP. Once a subject reaches
// its threshold of failures within Window, every further failure locks it for BaseLock,
// doubled for each failure past the threshold, up to MaxLock. While a subject is locked every
// login of it is refused at once (429), without looking at the password, so a locked account
// cannot be guessed at. Usernames are counted whether or not an account has them.
type ThrottlePolicy struct {
	UserFailures int           // failures of one username that lock it
	IPFailures   int           // failures from one client IP that lock it (higher: offices share one)
	Window       time.Duration // a failure older than this no longer counts
	BaseLock     time.Duration
	MaxLock      time.Duration
}

// DefaultThrottle: 5 failures of a username, or 20 from one address, within 15 minutes lock it
// for 30 s, then 1 min, 2 min, … up to an hour.
func DefaultThrottle() ThrottlePolicy {
	return ThrottlePolicy{UserFailures: 5, IPFailures: 20, Window: 15 * time.Minute, BaseLock: 30 * time.Second, MaxLock: time.Hour}
}

// lockFor is how long failures of a subject whose threshold is threshold lock it.
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

// userSubject is the throttle's key of a username: its SHA-256, so a password typed into the
// username field by mistake is not kept in clear.
func userSubject(username string) string {
	h := sha256.Sum256([]byte(username))
	return "user:" + hex.EncodeToString(h[:])
}

// ipSubject is the throttle's key of a client address.
func ipSubject(ip string) string { return "ip:" + ip }

// LockedError refuses a login while its username or address is locked; Wait says for how long
// yet (the Retry-After of the answer).
type LockedError struct{ Wait time.Duration }

func (e *LockedError) Error() string {
	return "Too many failed logins; try again later"
}

// checkLocked refuses a login whose username or client address is locked now.
func (s *Service) checkLocked(ctx context.Context, username, ip string) error {
	subjects := []string{userSubject(username)}
	if ip != "" {
		subjects = append(subjects, ipSubject(ip))
	}
	now := s.now()
	until, locked, err := s.store.LoginLockedUntil(ctx, subjects, now)
	if err != nil {
		return err
	}
	if locked {
		return &LockedError{Wait: until.Sub(now)}
	}
	return nil
}

// countFailure counts a failed login against its username and its client address.
func (s *Service) countFailure(ctx context.Context, username, ip string) error {
	p := s.cfg.Throttle
	now := s.now()
	if _, err := s.store.RecordLoginFailure(ctx, userSubject(username), now, p.Window, p.lockFor(p.UserFailures)); err != nil {
		return fmt.Errorf("count failed login: %w", err)
	}
	if ip == "" {
		return nil
	}
	if _, err := s.store.RecordLoginFailure(ctx, ipSubject(ip), now, p.Window, p.lockFor(p.IPFailures)); err != nil {
		return fmt.Errorf("count failed login: %w", err)
	}
	return nil
}
