package cache

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/redisscript"
)

// This file is the whole Redis data format: key names, hash fields, script statuses and
// script replies. The Lua scripts get the field names and status numbers from luaPrelude,
// so each is written once, here.

//go:generate go run ./internal/gentags -shards 256 -o shardtags.go

// The keys of one code — its hash, the replay markers and idempotency records of the requests
// that name it, and the outbox its events go to — share the hash tag of the code's
// virtual shard, so one Lua call touches one Redis Cluster slot and a project's codes spread
// over every master. Shards and their tags are generated (shardtags.go): shard i's tag lies in
// the i-th equal slice of the 16384 slots, so the equal slot ranges of `redis-cli --cluster
// create` give every master an equal number of shards.

// ShardOf is the virtual shard of a code: FNV-1a (64 bits) of the project id as its 16 raw
// bytes followed by the value, finished with MurmurHash3's 64-bit mixer (FNV-1a alone leaves
// its high bits nearly blind to the last bytes, where code values differ: CODE-0001,
// CODE-0002, …), and mapped onto [0, Shards) by its high 32 bits. It allocates nothing: it
// runs on every verify.
func ShardOf(projectID, value string) int {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	if isHexID(projectID) {
		for i := 0; i < len(projectID); i += 2 {
			h ^= uint64(contract.HexDigit(projectID[i])<<4 | contract.HexDigit(projectID[i+1]))
			h *= prime
		}
	} else {
		for i := 0; i < len(projectID); i++ {
			h ^= uint64(projectID[i])
			h *= prime
		}
	}
	for i := 0; i < len(value); i++ {
		h ^= uint64(value[i])
		h *= prime
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return int((h >> 32) * Shards >> 32)
}

// isHexID tells whether contract.RawID turns id into 16 bytes: 32 hex digits.
func isHexID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if contract.HexDigit(id[i]) > 15 {
			return false
		}
	}
	return true
}

// homeShard is the shard whose copy of a project's state authentication reads (the GET
// endpoints' 401 for a disabled project). Every shard holds the same state once an operator
// command returned; this one is merely fixed per project.
func homeShard(projectID string) int { return ShardOf(projectID, "") }

// ShardHashTag is shard s's hash tag, without its braces.
func ShardHashTag(s int) string { return shardTags[s*tagWidth : (s+1)*tagWidth] }

// ShardPrefix is the prefix of every key of shard s, hash tag included: "acv:{tag}:".
func ShardPrefix(s int) string { return "acv:{" + ShardHashTag(s) + "}:" }

// outboxKey names a shard's outbox, a list of events (audit/outbox.go). It shares the shard's
// hash tag, so the verify script changes a code and appends its event atomically on Redis
// Cluster.
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

// codeKey names a code's hash, in the code's shard. The project id is written as its 16 raw
// bytes, not 32 hex characters: with millions of codes a project, the key is most of what a
// code costs Redis. The fixed width keeps the key unambiguous without a separator.
func codeKey(projectID, value string) string {
	return codeKeyIn(ShardOf(projectID, value), projectID, value)
}

func codeKeyIn(s int, projectID, value string) string {
	return ShardPrefix(s) + "c:" + contract.RawID(projectID) + value
}

// projectKey names shard s's copy of a project's state. Every shard holds its own copy, so
// the verify script reads the project's flag and expiry in the code's slot.
func projectKey(s int, projectID string) string { return ShardPrefix(s) + "p:" + projectID }

// idemKey names an idempotency record, in the shard of the code the request names: a retry
// sends the same body, so it names the same code.
func idemKey(s int, keyID, idem string) string {
	return ShardPrefix(s) + "ik:" + keyID + ":" + idem
}

// apiKeyKey names an API key's mirror. Each key has a slot of its own: authentication reads
// it alone, never in a script with other keys.
func apiKeyKey(keyID string) string { return "acv:key:{" + keyID + "}" }

// bucketKey names an API key's token bucket, in the key's own slot: one bucket for all of the
// key's requests, whichever shards their codes live in.
func bucketKey(keyID string) string { return "acv:rl:{" + keyID + "}" }

// Hash fields. One letter each: a code's hash is paid for millions of times.
const (
	// A code's hash. A negative entry (the value is unknown in Postgres) holds only fUnknown.
	fCodeID     = "i" // code id, 16 raw bytes
	fExpiresAt  = "x" // unix s; absent = none (also the project's expiry in its hash)
	fVerifiedAt = "t" // unix ms; absent = unused
	fVerifiedBy = "b" // absent = none
	fDisabled   = "d" // "1" when disabled
	fVersion    = "n" // incremented by every state change (a project copy: its row's version)
	fUnknown    = "z" // "1" on a negative entry
	// A shard's copy of a project's state: fEnabled, fExpiresAt and fVersion, the version of
	// the projects row it was copied from (0: written without one).
	fEnabled = "en" // "1" / "0"
	// fProjectState holds fEnabled and fExpiresAt in one value, "1"/"0" followed by the expiry
	// if any, so apply.lua reads the copy with one HGET: no reply array to build.
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

// status is the explicit status number every script replies first (redisscript.Decode); success
// is never inferred from the other reply fields.
type status int64

// Script statuses.
const (
	statusOK           status = 0
	statusCodeMiss     status = 1 // the code is not in Redis: load it from Postgres and call again
	statusProjectMiss  status = 2 // the project is not in Redis: load it and call again
	statusRateLimited  status = 3
	statusUnchanged    status = 4 // nothing to do: an entry was there, or newer, or not this caller's
	statusIdemConflict status = 5
	statusIdemReplayed status = 6
)

// luaPrelude is what every script's library runs once when it loads: the field names,
// statuses and TTLs above as Lua locals (luaConstants), then scripts/prelude.lua.
func luaPrelude() string { return luaConstants() + preludeSrc }

// luaConstants defines the field names, statuses and TTLs above as Lua locals.
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

// applyReply is apply.lua's reply.
type applyReply struct {
	status       status
	errorCode    string
	codeID       string // 32 hex characters, "" when the code does not exist
	verifiedAtMs int64
	atMs         int64
}

// decodeApply reads apply.lua's reply to op (see its header): a status and a string, this
// call's outcome (S_OK: the code id as 16 raw bytes, then "error code|verified_at" unless it
// succeeded; "" when the code does not exist) or the outcome stored by the first request with
// its Idempotency-Key (S_IDEM_REPLAYED).
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
			if a.verifiedAtMs, err = parseMillis(vat); err != nil {
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
	a.verifiedAtMs, err1 = parseMillis(vat)
	a.atMs, err2 = parseMillis(at)
	if err := errors.Join(err1, err2); err != nil {
		return applyReply{}, applyScript.Errorf("malformed stored outcome %q: %w", s, err)
	}
	return a, nil
}

// parseMillis reads a time the scripts write: decimal digits, nothing else.
func parseMillis(s string) (int64, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a decimal time", s)
	}
	return strconv.ParseInt(s, 10, 64)
}

// admitReply is admit.lua's reply.
type admitReply struct {
	status      status
	rlRemaining int64
	rlWaitMs    int64
}

func decodeAdmit(v interface{}) (admitReply, error) {
	st, r, err := admitScript.Decode(v, 2)
	if err != nil {
		return admitReply{}, err
	}
	a := admitReply{status: status(st), rlRemaining: r.Int(0), rlWaitMs: r.Int(1)}
	return a, r.Err()
}

// disableReply is disable.lua's reply.
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

// decodeDone reads the reply of the scripts that answer a status alone: true for S_OK, false
// for S_UNCHANGED (an entry was there already, or newer; nothing to give back).
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
