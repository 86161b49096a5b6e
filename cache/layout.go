package cache

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/redisscript"
)

// This file is the whole Redis data format; the scripts get field names and statuses from
// luaPrelude, so each is written once.

// Shards is the number of virtual shards a project's codes are spread over; changing it moves
// every code to another key.
const Shards = 256

// A code's keys share its shard's hash tag, so one Lua call touches one slot and a project's
// codes spread over every master. Shard i's two-character tag hashes nearest the centre of
// the i-th of Shards equal slices of the slots, so each of 1 to 30 masters as redis-cli
// splits them holds floor or ceil of Shards/masters shards. Stored keys depend on it:
// shard_test.go derives the table again.
const shardTags = "" +
	"4Lbl4HLD9tAxX7z1BJCP6hNd07CXOv7zOI7EaaCg6WE8BuCoMi5e9KAG4ww6K68Y" + // shards 0..31
	"3AKMYaeezq2SzuXs1aImECyGs20sxUZSfhDnVB0L1ZgzkTIRdHFNTb2l3zeZitKr" + // shards 32..63
	"Qh7faBCD6tPzI5k3SH5F9hAd4TRZ4P8zne8EnaLg24owMuosBiNClANGOQmWOUmS" + // shards 64..95
	"fKDMHcjeks60kwIqdkFmJChEiSeyiWKQ3bUlYBeFo32po7M11BWL1Fgffp0PftDr" + // shards 96..127
	"bn4NLF4JAz9vz3X5H1BHNf6jCZ057xOt7GOKCeacNY6UCmBw5gMkAE9ILyU2i2K4" + // shards 128..159
	"KO3CegYcc8zsXqzwIo1cyEEA0qxSZQxWDlfj0NHBgx1XIPkVFLdJ2nJbeX3xKpiv" + // shards 160..191
	"7dQjCFQnPx6vk1I75DSJAf9jRX4V8x4R8GngLencT826oqMwNABkNElCCyOSmQOW" + // shards 192..223
	"DOfIjgHa62usIskuFodihGTCKWiQKSiUUnwheDGB2ro1M3o5WNuHgdEb0RfrDpfv" // shards 224..255

// ShardOf is the virtual shard of a code: FNV-1a of the project id's 16 raw bytes and the
// value, finished with MurmurHash3's mixer (FNV-1a's high bits barely see the last bytes,
// where code values differ). It runs on every verify, so it allocates nothing.
func ShardOf(projectID, value string) int {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	mix := func(s string) {
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= prime
		}
	}
	id := projectID
	var raw [16]byte
	if len(id) == 32 {
		if _, err := hex.Decode(raw[:], []byte(id)); err == nil {
			id = string(raw[:])
		}
	}
	mix(id)
	mix(value)
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return int((h >> 32) * Shards >> 32)
}

// homeShard is the shard whose copy of a project's state authentication reads.
func homeShard(projectID string) int { return ShardOf(projectID, "") }

// ShardHashTag is shard s's hash tag, without its braces.
func ShardHashTag(s int) string { return shardTags[2*s : 2*s+2] }

// ShardPrefix is the prefix of every key of shard s, hash tag included: "acv:{tag}:".
func ShardPrefix(s int) string { return "acv:{" + ShardHashTag(s) + "}:" }

// outboxKey names a shard's outbox, a list of events (audit/outbox.go), in the shard's slot.
func outboxKey(s int) string { return ShardPrefix(s) + "events" }

// OutboxOf names the outbox that receives a code's events.
func OutboxOf(projectID, value string) string { return outboxKey(ShardOf(projectID, value)) }

// Outboxes names every outbox, one a shard; the wiring hands them to the relay.
func Outboxes() []string {
	out := make([]string, Shards)
	for s := range out {
		out[s] = outboxKey(s)
	}
	return out
}

// codeKey names a code's hash, with the project id as 16 raw bytes (the key is most of what a
// code costs Redis; the fixed width needs no separator).
func codeKey(projectID, value string) string {
	return codeKeyIn(ShardOf(projectID, value), projectID, value)
}

func codeKeyIn(s int, projectID, value string) string {
	return ShardPrefix(s) + "c:" + contract.RawID(projectID) + value
}

// projectKey names shard s's copy of a project's state, for apply.lua to read in the code's slot.
func projectKey(s int, projectID string) string { return ShardPrefix(s) + "p:" + projectID }

// idemKey names an idempotency record, in the shard of the code the request names.
func idemKey(s int, keyID, idem string) string { return ShardPrefix(s) + "ik:" + keyID + ":" + idem }

// apiKeyKey and bucketKey name an API key's mirror and token bucket, each in a slot of its own.
func apiKeyKey(keyID string) string { return "acv:key:{" + keyID + "}" }

func bucketKey(keyID string) string { return "acv:rl:{" + keyID + "}" }

// Hash fields, one letter each: a code's hash is paid for millions of times.
const (
	// A code's hash. A negative entry (the value is unknown in Postgres) holds only fUnknown.
	fCodeID     = "i" // code id, 16 raw bytes
	fExpiresAt  = "x" // unix s; absent = none (also the project's expiry in its hash)
	fVerifiedAt = "t" // unix ms; absent = unused
	fVerifiedBy = "b" // absent = none
	fDisabled   = "d" // "1" when disabled
	fVersion    = "n" // incremented by every state change (a project copy: its row's version)
	fUnknown    = "z" // "1" on a negative entry
	// A shard's copy of a project's state: fEnabled, fExpiresAt and fVersion (its row's, 0
	// for none), and fProjectState, both in one value ("1"/"0" then the expiry) so apply.lua
	// reads the copy with one HGET.
	fEnabled      = "en" // "1" / "0"
	fProjectState = "s"
	// A key's token bucket.
	fTokens   = "tk" // tokens left, a decimal
	fRefilled = "ts" // unix ms of the last refill
	// An API key's mirror, and fVersion.
	fKeyProject = "kp" // the key's project id
	fKeySecret  = "ks" // the secret, sealed: Redis never holds it in clear
	fKeyRate    = "kr" // tokens per second, "0" = unlimited
	fKeyBurst   = "kb" // bucket size
	fKeyRevoked = "kx" // "1" once revoked, for good
)

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// unixOrEmpty is an optional unix time as the hashes and scripts hold it: "" for none.
func unixOrEmpty(t *int64) string {
	if t == nil {
		return ""
	}
	return strconv.FormatInt(*t, 10)
}

// status is the explicit status number every script replies first; success is never inferred
// from the other reply fields.
type status int64

const (
	statusOK           status = 0
	statusCodeMiss     status = 1 // the code is not in Redis: load it from Postgres and call again
	statusProjectMiss  status = 2 // the project is not in Redis: load it and call again
	statusRateLimited  status = 3
	statusUnchanged    status = 4 // nothing to do: an entry was there, or newer, or not this caller's
	statusIdemConflict status = 5
	statusIdemReplayed status = 6
)

// luaPrelude is what every script's library runs once when it loads: the constants above as
// Lua locals, then scripts/prelude.lua.
func luaPrelude() string { return luaConstants() + preludeSrc }

func luaConstants() string {
	var b strings.Builder
	for _, f := range [][2]string{
		{"F_ID", fCodeID}, {"F_EXP", fExpiresAt}, {"F_VAT", fVerifiedAt}, {"F_BY", fVerifiedBy},
		{"F_DIS", fDisabled}, {"F_VER", fVersion}, {"F_UNKNOWN", fUnknown}, {"F_EN", fEnabled},
		{"F_PSTATE", fProjectState},
		{"F_TOKENS", fTokens}, {"F_REFILLED", fRefilled},
		{"F_KEY_PROJECT", fKeyProject}, {"F_KEY_SECRET", fKeySecret}, {"F_KEY_RATE", fKeyRate},
		{"F_KEY_BURST", fKeyBurst}, {"F_KEY_REVOKED", fKeyRevoked},
	} {
		fmt.Fprintf(&b, "local %s = '%s'\n", f[0], f[1])
	}
	for _, s := range []struct {
		name string
		v    status
	}{
		{"S_OK", statusOK}, {"S_CODE_MISS", statusCodeMiss}, {"S_PROJECT_MISS", statusProjectMiss},
		{"S_RATE_LIMITED", statusRateLimited}, {"S_UNCHANGED", statusUnchanged},
		{"S_IDEM_CONFLICT", statusIdemConflict}, {"S_IDEM_REPLAYED", statusIdemReplayed},
	} {
		fmt.Fprintf(&b, "local %s = %d\n", s.name, s.v)
	}
	// TTLs in seconds, as strings: Redis formats a number passed to redis.call on every call.
	fmt.Fprintf(&b, "local T_IDEM = '%d'\n", int64(IdempotencyTTL/time.Second))
	return b.String()
}

type applyReply struct {
	status       status
	errorCode    string
	codeID       string // 32 hex characters, "" when the code does not exist
	verifiedAtMs int64
	atMs         int64
}

func decodeApply(v interface{}, op contract.Operation) (applyReply, error) {
	st, r, err := applyScript.Decode(v, 1)
	if err != nil {
		return applyReply{}, err
	}
	out := r.Str(0)
	if err := r.Err(); err != nil {
		return applyReply{}, err
	}
	switch st := status(st); st {
	case statusCodeMiss, statusProjectMiss, statusIdemConflict:
		if out != "" {
			return applyReply{}, applyScript.Errorf("status %d with the outcome %q", st, out)
		}
		return applyReply{status: st}, nil
	case statusIdemReplayed:
		a, err := decodeStoredOutcome(out)
		a.status = statusIdemReplayed
		return a, err
	case statusOK:
		return decodeOutcome(out, op)
	}
	return applyReply{}, applyScript.Errorf("unknown status %d", st)
}

// decodeOutcome reads the outcome of this call: "" when the code does not exist, else the code
// id (16 raw bytes) followed, unless the operation succeeded, by "error code|verified_at".
func decodeOutcome(out string, op contract.Operation) (applyReply, error) {
	a := applyReply{status: statusOK, atMs: op.Now.UnixMilli()}
	if out == "" {
		a.errorCode = string(contract.CodeNotFound)
		return a, nil
	}
	if len(out) < 16 {
		return applyReply{}, applyScript.Errorf("malformed outcome %q", out)
	}
	a.codeID = contract.HexID(out[:16])
	if rest := out[16:]; rest != "" {
		code, vat, ok := strings.Cut(rest, "|")
		if !ok || code == "" {
			return applyReply{}, applyScript.Errorf("malformed outcome %q", out)
		}
		a.errorCode = code
		if vat != "" {
			var err error
			if a.verifiedAtMs, err = contract.ParseDigits(vat); err != nil {
				return applyReply{}, applyScript.Errorf("malformed outcome %q: %w", out, err)
			}
		}
	} else if op.Action == contract.ActionVerify {
		a.verifiedAtMs = a.atMs
	}
	return a, nil
}

// decodeStoredOutcome reads the outcome an idempotency record holds: "verified_at|at|error
// code|code id (16 raw bytes)".
func decodeStoredOutcome(s string) (applyReply, error) {
	var a applyReply
	var vat, at string
	if f := strings.SplitN(s, "|", 4); len(f) == 4 && (f[3] == "" || len(f[3]) == 16) {
		vat, at, a.errorCode, a.codeID = f[0], f[1], f[2], contract.HexID(f[3])
	}
	var err1, err2 error
	a.verifiedAtMs, err1 = contract.ParseDigits(vat)
	a.atMs, err2 = contract.ParseDigits(at)
	if err := errors.Join(err1, err2); err != nil {
		return applyReply{}, applyScript.Errorf("malformed stored outcome %q: %w", s, err)
	}
	return a, nil
}

// bucketReply is admit.lua's reply (status, remaining, wait ms) or lease.lua's, which puts the
// tokens granted before the remaining.
type bucketReply struct {
	status                         status
	granted, rlRemaining, rlWaitMs int64
}

func decodeBucket(s *redisscript.Script, v interface{}) (bucketReply, error) {
	n := 2
	if s == leaseScript {
		n = 3
	}
	st, r, err := s.Decode(v, n)
	if err != nil {
		return bucketReply{}, err
	}
	a := bucketReply{status: status(st), rlRemaining: r.Int(n - 2), rlWaitMs: r.Int(n - 1)}
	if n == 3 {
		a.granted = r.Int(0)
	}
	if r.Err() == nil && a.status != statusOK && a.status != statusRateLimited {
		return a, s.Errorf("unknown status %d", a.status)
	}
	return a, r.Err()
}

type disableReply struct {
	status       status
	verifiedAtMs int64
	verifiedBy   string
	version      int64
}

func decodeDisable(v interface{}) (disableReply, error) {
	st, r, err := disableScript.Decode(v, 3)
	if err != nil {
		return disableReply{}, err
	}
	d := disableReply{status: status(st), verifiedAtMs: r.Int(0), verifiedBy: r.Str(1), version: r.Int(2)}
	return d, r.Err()
}

// runDone runs a script that answers a status alone (decodeDone), errors naming what.
func (c *Cache) runDone(ctx context.Context, what string, s *redisscript.Script, keys []string, args ...interface{}) (bool, error) {
	v, err := s.Run(ctx, c.rdb, keys, args...)
	ok, err := done(s, v, err)
	if err != nil {
		return false, fmt.Errorf("%s: %w", what, err)
	}
	return ok, nil
}

// done reads the reply or error of a script that answers a status alone.
func done(s *redisscript.Script, reply interface{}, err error) (bool, error) {
	if err != nil {
		return false, translate(err)
	}
	return decodeDone(s, reply)
}

func callDone(call *redisscript.Call) (bool, error) { return done(call.Script, call.Reply, call.Err) }

// decodeDone reads a status-alone reply: true for S_OK, false for S_UNCHANGED (an entry was
// there already, or newer).
func decodeDone(s *redisscript.Script, v interface{}) (bool, error) {
	st, _, err := s.Decode(v, 0)
	if err != nil {
		return false, err
	}
	switch status(st) {
	case statusOK:
		return true, nil
	case statusUnchanged:
		return false, nil
	}
	return false, s.Errorf("unknown status %d", st)
}
