package cache

import (
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/acv/acv/api/contract"
)

// This file is the whole Redis data format: key names, hash fields, script statuses and
// script replies. The Lua scripts get the field names and status numbers from luaPrelude,
// so each is written once, here.

// Shards is the number of hash-tag shards. Every key of one project lives in the shard of its
// project id, so one Lua call touches one Redis Cluster slot and the relay reads a known,
// fixed set of outbox streams. Changing it moves every key: it is part of the data format.
const Shards = 16

// shardOf is the hash-tag shard of a project: FNV-1a of its id, modulo Shards.
func shardOf(projectID string) int {
	h := fnv.New32a()
	h.Write([]byte(projectID))
	return int(h.Sum32() % Shards)
}

// shardTag is the prefix of every key of a shard, hash tag included: "acv:{NN}:".
func shardTag(shard int) string {
	return fmt.Sprintf("acv:{%02d}:", shard)
}

// ShardTag is the key prefix of the shard holding a project's keys, for tools that address
// Redis directly (the benchmark's ceilings).
func ShardTag(projectID string) string { return shardTag(shardOf(projectID)) }

// outboxKey names a shard's outbox stream. It shares the shard's hash tag, so a script can
// change a code and append its event atomically on Redis Cluster.
func outboxKey(shard int) string { return shardTag(shard) + "outbox" }

// OutboxStream names the outbox stream that receives a project's events.
func OutboxStream(projectID string) string { return outboxKey(shardOf(projectID)) }

// OutboxStreams names every outbox stream; the wiring hands them to the relay.
func OutboxStreams() []string {
	out := make([]string, Shards)
	for s := range out {
		out[s] = outboxKey(s)
	}
	return out
}

// codeKey names a code's hash. The project id is written as its 16 raw bytes, not 32 hex
// characters: with millions of codes a project, the key is most of what a code costs Redis.
// The fixed width keeps the key unambiguous without a separator.
func codeKey(projectID, value string) string {
	return ShardTag(projectID) + "c:" + rawID(projectID) + value
}

// apiKeyKey names an API key's mirror. Each key has a slot of its own: authentication reads
// it alone, never in a script with other keys.
func apiKeyKey(keyID string) string { return "acv:key:{" + keyID + "}" }

func projectKey(projectID string) string { return ShardTag(projectID) + "p:" + projectID }

func bucketKey(projectID, keyID string) string { return ShardTag(projectID) + "rl:" + keyID }

func replayKey(projectID, keyID, replay string) string {
	return ShardTag(projectID) + "rp:" + keyID + ":" + replay
}

func idemKey(projectID, keyID, idem string) string {
	return ShardTag(projectID) + "ik:" + keyID + ":" + idem
}

// rawID is a 32-hex-character id as 16 bytes; anything else is kept as it is (it names nothing
// that exists, so it only has to stay distinct).
func rawID(id string) string {
	if len(id) != 32 {
		return id
	}
	var b [16]byte
	if _, err := hex.Decode(b[:], []byte(id)); err != nil {
		return id
	}
	return string(b[:])
}

// hexID is the wire form of an id stored raw.
func hexID(raw string) string {
	if len(raw) != 16 {
		return raw
	}
	return hex.EncodeToString([]byte(raw))
}

// Hash fields. One letter each: a code's hash is paid for millions of times.
const (
	// A code's hash. A negative entry (the value is unknown in Postgres) holds only fUnknown.
	fCodeID     = "i" // code id, 16 raw bytes
	fExpiresAt  = "x" // unix s; absent = none (also the project's expiry in its hash)
	fVerifiedAt = "t" // unix ms; absent = unused
	fVerifiedBy = "b" // absent = none
	fDisabled   = "d" // "1" when disabled
	fVersion    = "n" // incremented by every state change
	fUnknown    = "z" // "1" on a negative entry
	// A project's hash: fEnabled and fExpiresAt.
	fEnabled = "en" // "1" / "0"
	// A key's token bucket.
	fTokens   = "tk" // tokens left, a decimal
	fRefilled = "ts" // unix ms of the last refill
	// An API key's mirror, and fVersion.
	fKeyProject = "kp" // the key's project id
	fKeySecret  = "ks" // the secret, sealed: Redis never holds it in clear
	fKeyRate    = "kr" // tokens per second, "0" = unlimited
	fKeyBurst   = "kb" // bucket size
	fKeyRevoked = "kx" // "1" once revoked, for good
	// An idempotency record.
	fRequestHash = "h" // hash of the request the key was first used with
	fStoredReply = "r" // the first outcome, packed as error|code id|verified at ms|at ms
)

// status is the explicit status number a script replies with; success is never inferred from
// the other reply fields.
type status int64

// Script statuses.
const (
	statusOK           status = 0
	statusCodeMiss     status = 1 // the code is not in Redis: load it from Postgres and call again
	statusProjectMiss  status = 2 // the project is not in Redis: load it and call again
	statusRateLimited  status = 3
	statusReplayed     status = 4
	statusIdemConflict status = 5
	statusIdemReplayed status = 6
)

// luaPrelude defines the field names and statuses above as Lua locals at the top of every
// script.
func luaPrelude() string {
	var b strings.Builder
	for _, f := range [][2]string{
		{"F_ID", fCodeID}, {"F_EXP", fExpiresAt}, {"F_VAT", fVerifiedAt}, {"F_BY", fVerifiedBy},
		{"F_DIS", fDisabled}, {"F_VER", fVersion}, {"F_UNKNOWN", fUnknown}, {"F_EN", fEnabled},
		{"F_TOKENS", fTokens}, {"F_REFILLED", fRefilled}, {"F_REQ_HASH", fRequestHash},
		{"F_REPLY", fStoredReply}, {"F_EVENT", eventField}, {"F_TRACEPARENT", traceparentField},
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
		{"S_RATE_LIMITED", statusRateLimited}, {"S_REPLAYED", statusReplayed},
		{"S_IDEM_CONFLICT", statusIdemConflict}, {"S_IDEM_REPLAYED", statusIdemReplayed},
	} {
		fmt.Fprintf(&b, "local %s = %d\n", s.name, s.v)
	}
	return b.String()
}

// reply reads a script's array reply strictly: a missing element, or one of another type
// than the script's header promises, is an error, never a zero value.
type reply struct {
	script string
	v      []interface{}
	err    error
}

func newReply(script string, v interface{}, want int) (*reply, error) {
	arr, ok := v.([]interface{})
	if !ok {
		return nil, fmt.Errorf("%s replied %T, want an array", script, v)
	}
	if len(arr) != want {
		return nil, fmt.Errorf("%s replied %d fields, want %d", script, len(arr), want)
	}
	return &reply{script: script, v: arr}, nil
}

func (r *reply) int(i int) int64 {
	n, ok := r.v[i].(int64)
	if !ok && r.err == nil {
		r.err = fmt.Errorf("%s reply field %d is %T, want an integer", r.script, i+1, r.v[i])
	}
	return n
}

func (r *reply) str(i int) string {
	s, ok := r.v[i].(string)
	if !ok && r.err == nil {
		r.err = fmt.Errorf("%s reply field %d is %T, want a string", r.script, i+1, r.v[i])
	}
	return s
}

// applyReply is apply.lua's reply.
type applyReply struct {
	status       status
	errorCode    string
	codeID       string
	verifiedAtMs int64
	atMs         int64
	rlRemaining  int64
	rlWaitMs     int64
}

func decodeApply(v interface{}) (applyReply, error) {
	r, err := newReply("apply.lua", v, 7)
	if err != nil {
		return applyReply{}, err
	}
	a := applyReply{status: status(r.int(0)), errorCode: r.str(1), codeID: r.str(2),
		verifiedAtMs: r.int(3), atMs: r.int(4), rlRemaining: r.int(5), rlWaitMs: r.int(6)}
	return a, r.err
}

// admitReply is admit.lua's reply.
type admitReply struct {
	status      status
	rlRemaining int64
	rlWaitMs    int64
}

func decodeAdmit(v interface{}) (admitReply, error) {
	r, err := newReply("admit.lua", v, 3)
	if err != nil {
		return admitReply{}, err
	}
	a := admitReply{status: status(r.int(0)), rlRemaining: r.int(1), rlWaitMs: r.int(2)}
	return a, r.err
}

// disableReply is disable.lua's reply.
type disableReply struct {
	status       status
	verifiedAtMs int64
	verifiedBy   string
	version      int64
}

func decodeDisable(v interface{}) (disableReply, error) {
	r, err := newReply("disable.lua", v, 4)
	if err != nil {
		return disableReply{}, err
	}
	d := disableReply{status: status(r.int(0)), verifiedAtMs: r.int(1), verifiedBy: r.str(2), version: r.int(3)}
	return d, r.err
}

// decodeStored reads the 1/0 reply of the scripts that store an entry unless one is present.
func decodeStored(script string, v interface{}) (bool, error) {
	n, ok := v.(int64)
	if !ok || (n != 0 && n != 1) {
		return false, fmt.Errorf("%s replied %v (%T), want 1 or 0", script, v, v)
	}
	return n == 1, nil
}

// Outbox entry fields: the event JSON and the trace context the relay turns into a header.
const (
	eventField       = contract.EventField
	traceparentField = contract.HeaderFieldPrefix + "traceparent"
)
