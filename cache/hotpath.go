package cache

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/redisscript"
	"github.com/redis/go-redis/v9"
)

// TTLs of the hot path's records.
const (
	// ReplayTTL outlives the signature window on both sides, so a request is refused as a
	// replay for as long as its timestamp would be accepted.
	ReplayTTL      = 2*contract.SignatureWindow*time.Second + 60*time.Second
	IdempotencyTTL = 24 * time.Hour
)

// maxLoads bounds the loads one operation may trigger: the code, the project, and one more
// of each if an admin change removed an entry in between.
const maxLoads = 4

// Verify redeems a code: unused → used. See Apply.
func (c *Cache) Verify(ctx context.Context, op contract.Operation) (contract.OperationResult, error) {
	op.Action = contract.ActionVerify
	return c.Apply(ctx, op)
}

// Reactivate returns a used code to unused. See Apply.
func (c *Cache) Reactivate(ctx context.Context, op contract.Operation) (contract.OperationResult, error) {
	op.Action = contract.ActionReactivate
	return c.Apply(ctx, op)
}

// Apply runs one verify or reactivate in the contract's order (replay 401, then 429, then
// 409): spend the replay marker and claim the Idempotency-Key, take a token, then one
// apply.lua call in the code's shard checks, transitions and logs atomically. A business
// outcome is no error. A refused or failed request gets its token back, and its marker and
// claim too when it surely changed nothing.
func (c *Cache) Apply(ctx context.Context, op contract.Operation) (contract.OperationResult, error) {
	// Refuse before any Redis call what the event's head cannot carry, and a request hash with
	// a space, which ends it in the idempotency record apply.lua writes.
	head, err := contract.AppendEventHead(make([]byte, 0, contract.EventHeadSize(op)), op)
	if err != nil {
		return contract.OperationResult{}, fmt.Errorf("apply: %w", err)
	}
	if strings.Contains(op.RequestHash, " ") {
		return contract.OperationResult{}, fmt.Errorf("apply: request hash %q holds a space", op.RequestHash)
	}
	pre, rate, err := c.precheck(ctx, op.KeyID, op.ReplayKey, &op, true, op.Limit, op.Now)
	if err != nil {
		return contract.OperationResult{Rate: rate}, err
	}
	res, unchanged, err := contract.OperationResult{}, true, contract.ErrIdempotencyConflict
	if pre.claim != claimConflict {
		res, unchanged, err = c.applyLoading(ctx, ShardOf(op.ProjectID, op.Code), op, head)
	}
	res.Rate = rate
	if err != nil {
		c.returnToken(ctx, op.KeyID, op.Limit)
		if unchanged {
			c.release(ctx, op.KeyID, op.ReplayKey, &op, pre)
		}
	}
	return res, err
}

// applyLoading runs apply.lua, loading what it misses, until it answers. unchanged is true
// when nothing surely changed: a refusal or a failed load (a failed script call may have run).
func (c *Cache) applyLoading(ctx context.Context, shard int, op contract.Operation, head []byte) (res contract.OperationResult, unchanged bool, err error) {
	for attempt := 0; attempt < maxLoads; attempt++ {
		r, err := c.applyOnce(ctx, shard, op, head)
		if err != nil {
			return contract.OperationResult{}, false, err
		}
		switch r.status {
		case statusCodeMiss:
			err = c.loadCode(ctx, op.ProjectID, op.Code)
		case statusProjectMiss:
			err = c.loadProject(ctx, shard, op.ProjectID)
		default:
			res, err := r.result(op)
			return res, err != nil, err
		}
		if err != nil {
			return contract.OperationResult{}, true, err
		}
	}
	return contract.OperationResult{}, true, errors.New("code state did not settle in redis after loading")
}

// applyOnce sends apply.lua once (see its header for KEYS and ARGV).
func (c *Cache) applyOnce(ctx context.Context, shard int, op contract.Operation, head []byte) (applyReply, error) {
	keys := make([]string, 3, 4)
	keys[0] = codeKeyIn(shard, op.ProjectID, op.Code)
	keys[1] = projectKey(shard, op.ProjectID)
	keys[2] = outboxKey(shard)
	args := []interface{}{head}
	if op.IdempotencyKey != "" {
		keys = append(keys, idemKey(shard, op.KeyID, op.IdempotencyKey))
		args = append(args, op.RequestHash)
	}
	v, err := c.call(ctx, applyScript, keys, args...)
	if err != nil {
		return applyReply{}, fmt.Errorf("run apply script: %w", err)
	}
	return decodeApply(v, op)
}

func (r applyReply) result(op contract.Operation) (contract.OperationResult, error) {
	var res contract.OperationResult
	switch r.status {
	case statusOK, statusIdemReplayed:
		res.Replayed = r.status == statusIdemReplayed
		res.Outcome = contract.Outcome{Action: op.Action, Code: op.Code, Error: contract.ErrorCode(r.errorCode),
			CodeID: r.codeID, VerifiedAt: r.verifiedAtMs, At: r.atMs}
		return res, nil
	case statusIdemConflict:
		return res, contract.ErrIdempotencyConflict
	}
	return res, fmt.Errorf("apply script replied unknown status %d", r.status)
}

func (c *Cache) loadCode(ctx context.Context, projectID, value string) error {
	if c.loader == nil {
		return errors.New("code not in redis and no loader configured")
	}
	rec, err := c.loader.CodeByValue(ctx, projectID, value)
	if errors.Is(err, contract.ErrNotFound) {
		return c.MarkUnknown(ctx, projectID, value, c.unknownTTL)
	}
	if err != nil {
		return fmt.Errorf("load code: %w", err)
	}
	_, err = c.PutCode(ctx, projectID, rec)
	return err
}

// Admit runs the replay check and the token bucket of a request outside verify and reactivate.
// Refusals are contract.ErrReplayed and contract.ErrRateLimited; a request refused for the rate
// gets its marker back, so it can be sent again unchanged.
func (c *Cache) Admit(ctx context.Context, a contract.Admission) (contract.RateState, error) {
	_, rs, err := c.precheck(ctx, a.KeyID, a.ReplayKey, nil, a.CheckReplay, a.Limit, a.Now)
	return rs, err
}

// precheck spends the replay marker when checkReplay (claiming op's Idempotency-Key, if any,
// in the same round trip), then takes a token; a refusal gives back what it wrote.
func (c *Cache) precheck(ctx context.Context, keyID, replay string, op *contract.Operation, checkReplay bool,
	l contract.RateLimit, now time.Time) (precall, contract.RateState, error) {
	unlimited := contract.RateState{Remaining: -1}
	var pre precall
	if checkReplay {
		var err error
		if pre, err = c.spendReplay(ctx, keyID, replay, op); err != nil {
			return pre, contract.RateState{}, err
		}
		if pre.replayed {
			c.release(ctx, keyID, replay, op, pre)
			return pre, unlimited, contract.ErrReplayed
		}
	}
	if l.Rate <= 0 {
		return pre, unlimited, nil
	}
	rs, err := c.takeToken(ctx, keyID, l, now)
	if err != nil {
		c.release(ctx, keyID, replay, op, pre)
	}
	return pre, rs, err
}

func (c *Cache) admit(ctx context.Context, keyID string, limit contract.RateLimit, now time.Time) (contract.RateState, error) {
	v, err := c.call(ctx, admitScript, []string{bucketKey(keyID)}, now.UnixMilli(),
		strconv.FormatFloat(limit.Rate, 'f', -1, 64), limit.Burst)
	if err != nil {
		return contract.RateState{}, fmt.Errorf("run admit script: %w", err)
	}
	r, err := decodeBucket(admitScript, v)
	if err != nil {
		return contract.RateState{}, err
	}
	rs := contract.RateState{Remaining: int(r.rlRemaining), Wait: time.Duration(r.rlWaitMs) * time.Millisecond}
	if r.status == statusRateLimited {
		return rs, contract.ErrRateLimited
	}
	return rs, nil
}

// Every replay-checked request has one replay marker, set by one SET NX in spendReplay, in a
// slot of its own keyed by the replay identity alone: nothing a client can vary without
// breaking the signature picks another marker, so a captured request is accepted once,
// whatever code, shard or method it is resent with. The Idempotency-Key claim (SET NX GET) is
// in its own slot too, since a key reused with another code would not find the code's shard.

type claimState int

const (
	claimNone     claimState = iota // no Idempotency-Key sent: no claim made
	claimFresh                      // first use: this request holds the claim
	claimRetry                      // the claim holds this request's hash: a retry
	claimConflict                   // the claim holds another request's hash
)

type precall struct {
	claim    claimState
	marked   bool // this request set its replay marker
	replayed bool // the marker was there: the request is a replay
}

func replayMarkerKey(keyID, replay string) string { return "acv:rp:{" + keyID + ":" + replay + "}" }

func claimKey(keyID, idem string) string { return "acv:ik:{" + keyID + ":" + idem + "}" }

// spendReplay sets the replay marker and, when op has an Idempotency-Key, claims it, in one
// round trip. A marker already there makes the request a replay.
func (c *Cache) spendReplay(ctx context.Context, keyID, replay string, op *contract.Operation) (precall, error) {
	if replay == "" {
		return precall{}, errors.New("replay check: the request has no replay identity")
	}
	pipe := c.rdb.Pipeline()
	marker := pipe.SetNX(ctx, replayMarkerKey(keyID, replay), "1", ReplayTTL)
	var cl *redis.StatusCmd
	if op != nil && op.IdempotencyKey != "" {
		cl = pipe.SetArgs(ctx, claimKey(op.KeyID, op.IdempotencyKey), op.RequestHash,
			redis.SetArgs{Mode: "NX", Get: true, TTL: IdempotencyTTL})
	}
	_, err := pipe.Exec(ctx)
	if err != nil && !errors.Is(err, redis.Nil) {
		return precall{}, fmt.Errorf("replay check: %w", translate(err))
	}
	p := precall{marked: marker.Val()}
	p.replayed = !p.marked
	if cl != nil {
		switch prev, err := cl.Result(); {
		case errors.Is(err, redis.Nil):
			p.claim = claimFresh
		case err != nil:
			return precall{}, fmt.Errorf("claim idempotency key: %w", translate(err))
		case prev == op.RequestHash:
			p.claim = claimRetry
		default:
			p.claim = claimConflict
		}
	}
	return p, nil
}

// release undoes what the pre-call wrote for a request that did not run, on its own deadline.
// A failed release only leaves them to expire: stricter than needed, never looser.
func (c *Cache) release(ctx context.Context, keyID, replay string, op *contract.Operation, p precall) {
	if !p.marked && p.claim != claimFresh {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseCallTimeout)
	defer cancel()
	if p.claim != claimFresh {
		_ = c.rdb.Del(ctx, replayMarkerKey(keyID, replay)).Err()
		return
	}
	var delMarker redisscript.Tail
	if p.marked {
		delMarker = func(ctx context.Context, pipe redis.Pipeliner) func() error {
			pipe.Del(ctx, replayMarkerKey(keyID, replay))
			return nil
		}
	}
	call := &redisscript.Call{Script: releaseScript, Keys: []string{claimKey(op.KeyID, op.IdempotencyKey)}, Args: []interface{}{op.RequestHash}}
	redisscript.Send(ctx, c.rdb, []*redisscript.Call{call}, delMarker)
}

// Rather than a round trip per request, each replica leases a few tokens at a time from the
// key's bucket (lease.lua): every admitted request still spent a token the bucket handed out,
// and a lapsed lease's tokens go back (refund.lua). A low lease refills in the background; a
// request finding none waits for at most one lease call. After a short answer the lease does
// not ask again before the bucket can have refilled.
const (
	leaseShare       = 20 // a lease holds at most 1/leaseShare of a second of the key's rate
	minLease         = 2  // a key allowing less takes each token from the bucket (admit.lua)
	leaseTTL         = time.Second
	leaseBackoff     = 50 * time.Millisecond
	leaseCallTimeout = time.Second // one lease or give-back call, whatever the requests' deadlines
)

// leaseMax is the largest lease of a key's bucket; under minLease the key is not leased.
func leaseMax(l contract.RateLimit) int {
	return min(int(l.Rate/leaseShare), l.Burst)
}

type limiter struct {
	c      *Cache
	mu     sync.Mutex
	leases map[string]*lease
}

// lease is one key's local allowance, timed by the requests' own clocks (Operation.Now).
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

type refill struct {
	done chan struct{}
	err  error
}

// take admits one request of keyID from the local lease, or answers contract.ErrRateLimited
// with the wait, or the lease call's failure.
func (m *limiter) take(ctx context.Context, keyID string, l contract.RateLimit, now time.Time) (contract.RateState, error) {
	m.mu.Lock()
	ls, ok := m.leases[keyID]
	if !ok {
		ls = &lease{limit: l}
		m.leases[keyID] = ls
	}
	m.mu.Unlock()
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

// want is the size of the next lease, from this replica's demand; ls.mu held.
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
		var a bucketReply
		if err == nil {
			a, err = decodeBucket(leaseScript, v)
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
func (ls *lease) record(a bucketReply, want int, now time.Time) {
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

// takeToken takes one request's token from the local lease, or from the bucket (admit.lua)
// when the key's rate is too low to lease.
func (c *Cache) takeToken(ctx context.Context, keyID string, l contract.RateLimit, now time.Time) (contract.RateState, error) {
	if leaseMax(l) >= minLease {
		return c.limits.take(ctx, keyID, l, now)
	}
	return c.admit(ctx, keyID, l, now)
}

// returnToken gives back takeToken's token for a request refused or failed: to the lease, or
// to the bucket on its own deadline (the caller's may be what ended the request).
func (c *Cache) returnToken(ctx context.Context, keyID string, l contract.RateLimit) {
	if l.Rate <= 0 {
		return
	}
	if leaseMax(l) >= minLease {
		c.limits.giveBack(keyID)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseCallTimeout)
	defer cancel()
	_, _ = refundScript.Run(ctx, c.rdb, []string{bucketKey(keyID)}, l.Burst)
}
