package cache

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/acv/acv/api/contract"
)

// Leases of tokens. A rate-limited key's bucket lives in the key's own Redis slot; taking a
// token from it on every request would cost each verify a round trip before its script. Instead
// each replica holds a small local allowance per key, a lease of whole tokens taken from the
// bucket in one call (lease.lua), and admits requests from it without Redis. The bucket stays
// the one limit: every admitted request spent a token the bucket handed out, so replicas
// together never admit more than the bucket's rate plus its burst; what they may lose is only
// the tokens a lease held when it lapsed, which are given back (refund.lua).
//
// A lease is refilled in the background once it runs low, while the requests that still find
// a token go on; a request that finds none waits for the refill in flight (or starts one) and,
// if it brings no token either, is refused: a request waits for at most one round trip. When
// the bucket was short, the lease does not ask again before the bucket can have refilled part
// of a lease (never longer than half the burst takes to refill, so the bucket does not overflow
// while every replica waits): requests in between are refused locally, with the bucket's wait.
const (
	// leaseShare: a lease holds at most 1/leaseShare of a second of the key's rate, so the
	// tokens a replica holds at any time are a small part of what the key may spend.
	leaseShare = 20
	// minLease is the smallest lease worth taking. A key whose rate or burst allows less
	// (under 40 requests/s, or a burst of 1) takes each request's token from the bucket
	// (admit.lua): its requests are few, and the bucket's answers stay exact.
	minLease = 2
	// leaseTTL bounds how long a replica holds tokens it has not used; then they go back.
	leaseTTL = time.Second
	// leaseBackoff bounds how long a lease waits before asking a short bucket again.
	leaseBackoff = 50 * time.Millisecond
	// leaseCallTimeout bounds one lease or give-back call, whatever the requests' deadlines.
	leaseCallTimeout = time.Second
)

// leaseMax is the largest lease of a key's bucket; under minLease the key is not leased.
func leaseMax(l contract.RateLimit) int {
	return min(int(l.Rate/leaseShare), l.Burst)
}

// limiter holds this replica's leases, one per rate-limited key it has served.
type limiter struct {
	c      *Cache
	mu     sync.Mutex
	leases map[string]*lease
}

// lease is one key's local allowance. Times are the requests' own clocks (Operation.Now), as
// the bucket's are.
type lease struct {
	mu        sync.Mutex
	limit     contract.RateLimit
	tokens    int       // whole tokens left to admit locally
	expires   time.Time // tokens left then go back to the bucket
	bucket    int       // whole tokens the bucket held after its last answer
	shortTill time.Time // the bucket was short: no new lease asked before then
	refill    *refill   // the lease call in flight, if any
	// demand: requests seen in the current and the previous second, to size leases.
	winStart           time.Time
	winCount, winPrior int
}

// refill is one lease call; done closes when its answer is in the lease.
type refill struct {
	done chan struct{}
	err  error
}

func newLimiter(c *Cache) *limiter { return &limiter{c: c, leases: make(map[string]*lease)} }

func (m *limiter) lease(keyID string, l contract.RateLimit) *lease {
	m.mu.Lock()
	defer m.mu.Unlock()
	ls, ok := m.leases[keyID]
	if !ok {
		ls = &lease{limit: l}
		m.leases[keyID] = ls
	}
	return ls
}

// take admits one request of keyID from the local lease: nil and the rate state, or
// contract.ErrRateLimited with the wait, or the lease call's failure.
func (m *limiter) take(ctx context.Context, keyID string, l contract.RateLimit, now time.Time) (contract.RateState, error) {
	ls := m.lease(keyID, l)
	ls.mu.Lock()
	if ls.limit != l {
		// The key's limit changed: what was leased under the old one lapses.
		*ls = lease{limit: l, refill: ls.refill}
	}
	ls.observe(now)
	m.expire(keyID, ls, now)
	if ls.tokens > 0 {
		rs := ls.spend()
		if ls.tokens <= ls.want()/2 && ls.refill == nil && !now.Before(ls.shortTill) {
			m.start(keyID, ls, now) // ahead of need, overlapping the requests it will serve
		}
		ls.mu.Unlock()
		return rs, nil
	}
	if ls.refill == nil && now.Before(ls.shortTill) {
		rs := contract.RateState{Remaining: 0, Wait: ls.shortTill.Sub(now)}
		ls.mu.Unlock()
		return rs, contract.ErrRateLimited
	}
	r := ls.refill
	if r == nil {
		r = m.start(keyID, ls, now)
	}
	ls.mu.Unlock()
	select {
	case <-r.done:
	case <-ctx.Done():
		return contract.RateState{}, fmt.Errorf("wait for a token lease: %w", ctx.Err())
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.tokens > 0 {
		return ls.spend(), nil
	}
	if r.err != nil {
		return contract.RateState{}, r.err
	}
	return contract.RateState{Remaining: 0, Wait: max(ls.shortTill.Sub(now), time.Millisecond)}, contract.ErrRateLimited
}

// giveBack returns the token of a request taken but then refused or failed to the lease.
func (m *limiter) giveBack(keyID string) {
	m.mu.Lock()
	ls := m.leases[keyID]
	m.mu.Unlock()
	if ls == nil {
		return
	}
	ls.mu.Lock()
	ls.tokens++
	ls.mu.Unlock()
}

// spend takes one local token; ls.mu held.
func (ls *lease) spend() contract.RateState {
	ls.tokens--
	return contract.RateState{Remaining: ls.tokens + ls.bucket}
}

// observe counts a request into the demand estimate; ls.mu held.
func (ls *lease) observe(now time.Time) {
	switch d := now.Sub(ls.winStart); {
	case d >= 2*time.Second || d < 0:
		ls.winStart, ls.winCount, ls.winPrior = now, 0, 0
	case d >= time.Second:
		ls.winStart, ls.winPrior, ls.winCount = ls.winStart.Add(time.Second), ls.winCount, 0
	}
	ls.winCount++
}

// want is the size of the next lease: a twentieth of a second of this replica's demand, at
// least minLease, at most leaseMax; ls.mu held.
func (ls *lease) want() int {
	demand := max(ls.winCount, ls.winPrior)
	return max(minLease, min(leaseMax(ls.limit), demand/leaseShare))
}

// expire gives a lapsed lease's tokens back to the bucket, in the background; ls.mu held.
func (m *limiter) expire(keyID string, ls *lease, now time.Time) {
	if ls.tokens == 0 || now.Before(ls.expires) {
		return
	}
	n, burst := ls.tokens, ls.limit.Burst
	ls.tokens = 0
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), leaseCallTimeout)
		defer cancel()
		_, _ = refundScript.Run(ctx, m.c.rdb, []string{bucketKey(keyID)}, burst, n)
	}()
}

// start sends a lease call in the background; ls.mu held.
func (m *limiter) start(keyID string, ls *lease, now time.Time) *refill {
	r := &refill{done: make(chan struct{})}
	ls.refill = r
	want, l := ls.want(), ls.limit
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), leaseCallTimeout)
		defer cancel()
		v, err := m.c.call(ctx, leaseScript, []string{bucketKey(keyID)}, now.UnixMilli(),
			strconv.FormatFloat(l.Rate, 'f', -1, 64), l.Burst, want)
		var a leaseReply
		if err == nil {
			a, err = decodeLease(v)
		}
		ls.mu.Lock()
		ls.refill = nil
		if err != nil {
			r.err = fmt.Errorf("run lease script: %w", err)
		} else if ls.limit == l {
			ls.record(a, want, now)
		}
		ls.mu.Unlock()
		close(r.done)
	}()
	return r
}

// record puts a lease call's answer into the lease; ls.mu held.
func (ls *lease) record(a leaseReply, want int, now time.Time) {
	ls.bucket = int(a.rlRemaining)
	if a.granted > 0 {
		ls.tokens += int(a.granted)
		ls.expires = now.Add(leaseTTL)
	}
	short := want - int(a.granted)
	if short <= 0 {
		ls.shortTill = time.Time{}
		return
	}
	// Come back once the bucket may hold what was missing, but before it could overflow.
	back := time.Duration(float64(short) / ls.limit.Rate * float64(time.Second))
	back = min(back, leaseBackoff, time.Duration(float64(ls.limit.Burst)/(2*ls.limit.Rate)*float64(time.Second)))
	back = max(back, time.Duration(a.rlWaitMs)*time.Millisecond)
	ls.shortTill = now.Add(back)
}

// leaseReply is lease.lua's reply.
type leaseReply struct {
	status      status
	granted     int64
	rlRemaining int64
	rlWaitMs    int64
}

func decodeLease(v interface{}) (leaseReply, error) {
	st, r, err := leaseScript.Decode(v, 3)
	if err != nil {
		return leaseReply{}, err
	}
	a := leaseReply{status: status(st), granted: r.Int(0), rlRemaining: r.Int(1), rlWaitMs: r.Int(2)}
	if r.Err() == nil && a.status != statusOK && a.status != statusRateLimited {
		return a, leaseScript.Errorf("unknown status %d", a.status)
	}
	return a, r.Err()
}

// takeToken takes the token of one rate-limited request: from the local lease when the key's
// rate is high enough to lease, else from the bucket (admit.lua). leased tells which, for
// returnToken.
func (c *Cache) takeToken(ctx context.Context, keyID string, l contract.RateLimit, now time.Time) (rs contract.RateState, leased bool, err error) {
	if leaseMax(l) >= minLease {
		rs, err = c.limits.take(ctx, keyID, l, now)
		return rs, true, err
	}
	rs, err = c.admit(ctx, keyID, l, now)
	return rs, false, err
}

// returnToken gives back the token of a request refused or failed after takeToken: to the
// lease, or to the bucket on the caller's behalf (refund.lua, on its own deadline: the
// caller's may be what ended the request). Either way the bucket is off by one token at most:
// a failed refund costs the key one; a refund after a call whose answer was lost (a timeout)
// though its script ran gives one back.
func (c *Cache) returnToken(ctx context.Context, keyID string, l contract.RateLimit, leased bool) {
	if leased {
		c.limits.giveBack(keyID)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseCallTimeout)
	defer cancel()
	_, _ = refundScript.Run(ctx, c.rdb, []string{bucketKey(keyID)}, l.Burst)
}
