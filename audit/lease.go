package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/internal/redisscript"
)

// Relays share the outboxes by leases, one key per outbox in its slot; which relay holds which
// follows from the live relays' names (a sorted set of expiring heartbeats) by rendezvous
// hashing. Leases spread the work, they do not guard the outbox: a relay that still believes it
// holds a lease only publishes entries twice, since the trim checks the list (scripts/trim.lua).

// leaseKeyOf names an outbox's lease key: the outbox's own name and a suffix, so it shares the
// outbox's hash tag and slot.
func leaseKeyOf(outbox string) string { return outbox + ":relay" }

// membersKeyOf names the sorted set of live relays of one set of outboxes, so relays of other
// outboxes (another deployment, a test beside) do not see each other.
func membersKeyOf(outboxes []string) string {
	h := fnv.New64a()
	for _, k := range outboxes {
		h.Write([]byte(k))
		h.Write([]byte{0})
	}
	return "acv:relays:" + strconv.FormatUint(h.Sum64(), 16)
}

// newToken is a relay process's lease token: its name, then a random part, so a restarted
// relay of the same name is told from its previous run yet may take over that run's leases.
func newToken(name string) string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return name + "/" + hex.EncodeToString(b[:])
}

func nameOf(token string) string {
	if i := strings.LastIndexByte(token, '/'); i >= 0 {
		return token[:i]
	}
	return token
}

// preferredRelay is the name, among names, that should hold the outbox: the highest of
// FNV-1a(name, outbox). Every relay computes the same answer from the same member list.
func preferredRelay(names []string, outbox string) string {
	var best string
	var bestScore uint64
	for _, n := range names {
		h := fnv.New64a()
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write([]byte(outbox))
		if s := h.Sum64(); best == "" || s > bestScore || (s == bestScore && n < best) {
			best, bestScore = n, s
		}
	}
	return best
}

// leases keeps this relay's share of the outboxes; held, read by the workers, is replaced whole
// on each round.
type leases struct {
	rdb      redis.Cmdable
	outboxes []string
	members  string
	token    string
	name     string
	ttl      time.Duration
	held     atomic.Pointer[[]bool]
	relays   atomic.Int64 // live relays seen at the last round
}

func newLeases(rdb redis.Cmdable, outboxes []string, name string, ttl time.Duration) *leases {
	l := &leases{rdb: rdb, outboxes: outboxes, members: membersKeyOf(outboxes), token: newToken(name), name: name, ttl: ttl}
	none := make([]bool, len(outboxes))
	l.held.Store(&none)
	return l
}

// Held tells whether this relay holds outbox i's lease as of the last round.
func (l *leases) Held(i int) bool { return (*l.held.Load())[i] }

func (l *leases) count() int {
	n := 0
	for _, h := range *l.held.Load() {
		if h {
			n++
		}
	}
	return n
}

// round beats the heartbeat, reads the live relays, and takes, renews or gives up each lease.
// On a Redis error the held set stays as it was (the leases run out in Redis on their own).
func (l *leases) round(ctx context.Context) error {
	names, err := l.heartbeat(ctx)
	if err != nil {
		return err
	}
	l.relays.Store(int64(len(names)))
	old := *l.held.Load()
	ms := strconv.FormatInt(l.ttl.Milliseconds(), 10)
	var calls []*redisscript.Call
	var acquired []int // outbox index of each acquire call
	for i, k := range l.outboxes {
		switch {
		case preferredRelay(names, k) == l.name:
			calls = append(calls, &redisscript.Call{Script: acquireScript, Keys: []string{leaseKeyOf(k)}, Args: []any{l.token, ms, l.name + "/"}})
			acquired = append(acquired, i)
		case old[i]:
			calls = append(calls, &redisscript.Call{Script: releaseScript, Keys: []string{leaseKeyOf(k)}, Args: []any{l.token}})
		}
	}
	done, err := runScripts(ctx, l.rdb, calls)
	held := make([]bool, len(l.outboxes))
	for c, i := range acquired {
		// A renewal that got no answer keeps what we had: the lease may still be ours.
		held[i] = done[c] || (calls[c].Err != nil && old[i])
	}
	l.held.Store(&held)
	if err != nil {
		return fmt.Errorf("relay leases: %w", err)
	}
	return nil
}

// heartbeat records this relay as live until one lease lifetime from now, drops the members
// whose heartbeat ran out, and returns the live relays' names, sorted and unique.
func (l *leases) heartbeat(ctx context.Context) ([]string, error) {
	now := time.Now()
	var members *redis.StringSliceCmd
	_, err := l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, l.members, redis.Z{Score: float64(now.Add(l.ttl).UnixMilli()), Member: l.token})
		p.ZRemRangeByScore(ctx, l.members, "-inf", "("+strconv.FormatInt(now.UnixMilli(), 10))
		p.PExpire(ctx, l.members, 2*l.ttl)
		members = p.ZRange(ctx, l.members, 0, -1)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("relay heartbeat: %w", err)
	}
	names := make([]string, 0, len(members.Val()))
	for _, t := range members.Val() {
		names = append(names, nameOf(t))
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// releaseAll gives up every lease and leaves the member set, so the other relays take this
// relay's outboxes at their next round instead of a lease lifetime later.
func (l *leases) releaseAll(ctx context.Context) error {
	held := *l.held.Load()
	none := make([]bool, len(l.outboxes))
	l.held.Store(&none)
	var calls []*redisscript.Call
	for i, k := range l.outboxes {
		if held[i] {
			calls = append(calls, &redisscript.Call{Script: releaseScript, Keys: []string{leaseKeyOf(k)}, Args: []any{l.token}})
		}
	}
	_, err := runScripts(ctx, l.rdb, calls)
	if zerr := l.rdb.ZRem(ctx, l.members, l.token).Err(); err == nil && zerr != nil {
		err = zerr
	}
	if err != nil {
		return fmt.Errorf("release relay leases: %w", err)
	}
	return nil
}

// LiveRelays counts the relays whose heartbeat on outboxes has not expired at now. Zero while
// log events are being written means nothing moves them to PostgreSQL.
func LiveRelays(ctx context.Context, rdb redis.Cmdable, outboxes []string, now time.Time) (int64, error) {
	n, err := rdb.ZCount(ctx, membersKeyOf(outboxes), strconv.FormatInt(now.UnixMilli(), 10), "+inf").Result()
	if err != nil {
		return 0, fmt.Errorf("count live relays: %w", err)
	}
	return n, nil
}
