package contract

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Event is one verification-log record on its way from the Redis outbox through Kafka to
// Postgres, with the code's state after it so the consumer updates the row in version order.
type Event struct {
	ID         string `json:"id"`
	CodeID     string `json:"code_id"`        // "" for an attempt on a value no code has
	Code       string `json:"code,omitempty"` // that value, when CodeID is ""
	ProjectID  string `json:"project_id"`
	Action     Action `json:"action"`
	Result     string `json:"result"`
	Reason     string `json:"reason,omitempty"`
	VerifiedBy string `json:"verified_by,omitempty"`
	IP         string `json:"ip"`
	TS         int64  `json:"ts"` // unix ms of the operation
	Version    int64  `json:"version"`
	Changed    bool   `json:"state_changed"`
	VerifiedAt int64  `json:"verified_at,omitempty"` // unix ms, 0 = unused
	StateBy    string `json:"state_verified_by,omitempty"`
	Disabled   bool   `json:"disabled,omitempty"`
}

// Unknown tells whether e is an attempt on a value no code of the project has.
func (e *Event) Unknown() bool { return e.CodeID == "" && e.Code != "" }

// WellFormedIDs tells whether e's ids are 32 lowercase hex digits, as the uuid columns take them.
func (e *Event) WellFormedIDs() bool {
	return ValidID(e.ID) && ValidID(e.ProjectID) && (e.Unknown() || ValidID(e.CodeID))
}

// An outbox entry holds one Event in a compact form: apply.lua appends the few bytes only it
// knows (the code's id and state) to a head the API encoded before the call.
//
//	entry = head tail
//	head  = 0x01                         format
//	        action        1 byte         'v' verify, 'r' reactivate
//	        ts            13 digits      unix ms of the operation
//	        verified_by                  the caller's verified_by or reactivated_by
//	        event id      16 bytes       the raw form of the 32-hex id
//	        project id    16 bytes
//	        reason, ip, traceparent
//	tail  = code id       16 bytes
//	        disabled      1 byte         '0' / '1'
//	        error code "|" version "|" verified_at "|" state's verified_by
//	      | 16 zero bytes
//	        '!'                          an attempt on a value no code of the project has
//	        the value                    the rest of the entry
//
// Each text of the head is its length plus one as a uvarint (never a NUL byte), then its
// bytes. In the tail, the error code is empty when the state changed, version is the one
// before the operation, verified_at is decimal unix ms or empty.
const (
	outboxFormat = 0x01
	unknownMark  = '!' // the disabled byte of an attempt on an unknown value, after zeroID
	zeroID       = "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	tsDigits     = 13 // ts's exact width: unix ms from 2001-09-09 to 2286-11-20
	minTS        = 1_000_000_000_000
	maxTS        = 9_999_999_999_999
	maxByLen     = 1<<14 - 2 // verified_by's length plus one fits two uvarint bytes
)

// EventHeadSize is the length of op's event head.
func EventHeadSize(op Operation) int {
	n := 1 + 1 + tsDigits + 16 + 16
	var buf [binary.MaxVarintLen64]byte
	for _, s := range [...]string{op.By, op.Reason, op.IP, op.TraceParent} {
		n += binary.PutUvarint(buf[:], uint64(len(s)+1)) + len(s)
	}
	return n
}

// AppendEventHead appends the head of op's outbox entry, refusing what the script or the
// reader would misread.
func AppendEventHead(dst []byte, op Operation) ([]byte, error) {
	if op.Action != ActionVerify && op.Action != ActionReactivate {
		return dst, fmt.Errorf("event head: action %q is neither %s nor %s", op.Action, ActionVerify, ActionReactivate)
	}
	if !ValidID(op.EventID) || !ValidID(op.ProjectID) {
		return dst, fmt.Errorf("event head: event id %q and project id %q must be 32 lowercase hex characters", op.EventID, op.ProjectID)
	}
	ts := op.Now.UnixMilli()
	if ts < minTS || ts > maxTS {
		return dst, fmt.Errorf("event head: time %s is outside the years 2001 to 2286", op.Now)
	}
	if len(op.By) > maxByLen {
		return dst, fmt.Errorf("event head: verified_by of %d bytes", len(op.By))
	}
	dst = append(dst, outboxFormat, op.Action[0]) // 'v' or 'r'
	dst = strconv.AppendInt(dst, ts, 10)
	dst = appendText(dst, op.By)
	dst, _ = hex.AppendDecode(dst, []byte(op.EventID)) // both valid: checked above
	dst, _ = hex.AppendDecode(dst, []byte(op.ProjectID))
	for _, s := range [...]string{op.Reason, op.IP, op.TraceParent} {
		dst = appendText(dst, s)
	}
	return dst, nil
}

func appendText(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s)+1)), s...)
}

func readText(rest string) (text, after string, ok bool) {
	n, w := binary.Uvarint([]byte(rest[:min(len(rest), binary.MaxVarintLen64)]))
	if w <= 0 || n == 0 || n-1 > uint64(len(rest)-w) {
		return "", "", false
	}
	end := w + int(n-1)
	return rest[w:end], rest[end:], true
}

var errEntry = errors.New("malformed outbox entry")

// DecodeOutboxEntry reads an outbox entry (a Kafka message's value) and its trace context,
// strictly: anything out of place is an error.
func DecodeOutboxEntry(raw string) (ev Event, traceParent string, err error) {
	const fixed = 1 + 1 + tsDigits
	if len(raw) < fixed || raw[0] != outboxFormat {
		return Event{}, "", fmt.Errorf("%w: no compact head", errEntry)
	}
	if ev.Action = ActionVerify; raw[1] == 'r' {
		ev.Action = ActionReactivate
	} else if raw[1] != 'v' {
		return Event{}, "", fmt.Errorf("%w: action %q", errEntry, raw[1])
	}
	if ev.TS, err = ParseDigits(raw[2:fixed]); err != nil {
		return Event{}, "", fmt.Errorf("%w: ts: %v", errEntry, err)
	}
	by, rest, ok := readText(raw[fixed:])
	if !ok || len(rest) < 32 {
		return Event{}, "", fmt.Errorf("%w: short head", errEntry)
	}
	ev.VerifiedBy = by
	ev.ID = hex.EncodeToString([]byte(rest[:16]))
	ev.ProjectID = hex.EncodeToString([]byte(rest[16:32]))
	rest = rest[32:]
	var texts [3]string
	for i := range texts {
		if texts[i], rest, ok = readText(rest); !ok {
			return Event{}, "", fmt.Errorf("%w: head text %d", errEntry, i+2)
		}
	}
	reason, traceParent := texts[0], texts[2]
	ev.IP = texts[1]
	if len(rest) < 17 {
		return Event{}, "", fmt.Errorf("%w: no tail", errEntry)
	}
	if rest[16] == unknownMark {
		// An attempt on an unknown value: no code, so no id, state or version.
		if rest[:16] != zeroID || len(rest) == 17 {
			return Event{}, "", fmt.Errorf("%w: unknown-code tail", errEntry)
		}
		ev.Code = rest[17:]
		ev.Result, ev.Reason = ResultFailed, string(CodeNotFound)
		return ev, traceParent, nil
	}
	ev.CodeID = hex.EncodeToString([]byte(rest[:16]))
	switch rest[16] {
	case '0':
	case '1':
		ev.Disabled = true
	default:
		return Event{}, "", fmt.Errorf("%w: disabled %q", errEntry, rest[16])
	}
	f := strings.SplitN(rest[17:], "|", 4)
	if len(f) != 4 {
		return Event{}, "", fmt.Errorf("%w: tail %q", errEntry, rest[17:])
	}
	if ev.Version, err = ParseDigits(f[1]); err != nil {
		return Event{}, "", fmt.Errorf("%w: version: %v", errEntry, err)
	}
	if f[2] != "" {
		if ev.VerifiedAt, err = ParseDigits(f[2]); err != nil {
			return Event{}, "", fmt.Errorf("%w: verified_at: %v", errEntry, err)
		}
	}
	ev.StateBy = f[3]
	ev.Changed = f[0] == ""
	switch {
	case !ev.Changed:
		ev.Result, ev.Reason = ResultFailed, f[0]
	case ev.Action == ActionVerify:
		ev.Result, ev.Version = ResultSuccess, ev.Version+1
	default:
		ev.Result, ev.Reason, ev.Version = ResultReactivated, reason, ev.Version+1
	}
	return ev, traceParent, nil
}

// ParseDigits reads a non-negative decimal of digits only (no sign, no space).
func ParseDigits(s string) (int64, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a decimal", s)
	}
	return strconv.ParseInt(s, 10, 64)
}

// NewID returns a time-ordered UUIDv7 as 32 lowercase hex characters, so ids sort by creation.
func NewID() string {
	u, err := uuid.NewV7()
	if err != nil { // only when crypto/rand fails
		panic(fmt.Sprintf("generate uuidv7: %v", err))
	}
	return hex.EncodeToString(u[:])
}

// ValidID tells whether s has the wire form of an id: 32 lowercase hex characters.
func ValidID(s string) bool { return len(s) == 32 && lowerHex(s) }

// HexDigit is the value of the hex digit c, either case, or 255 when c is none.
func HexDigit(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10
	}
	return 255
}

// RawID is an id as its 16 raw bytes, as Redis and the outbox hold it; anything but 32 hex
// digits is returned as it is (it names nothing, so it only has to stay distinct).
func RawID(id string) string {
	if len(id) != 32 {
		return id
	}
	var b [16]byte
	if _, err := hex.Decode(b[:], []byte(id)); err != nil {
		return id
	}
	return string(b[:])
}

// HexID is the wire form of an id held as its 16 raw bytes; anything else is returned as it is.
func HexID(raw string) string {
	if len(raw) != 16 {
		return raw
	}
	return hex.EncodeToString([]byte(raw))
}

// NewKeyID returns a fresh API key id: a UUIDv7's first 12 bytes and a CRC-32 of them, so a
// made-up key id is refused without asking any store. Older ids fail the checksum; they stay
// valid while the key mirror holds them.
func NewKeyID() string {
	b := []byte(RawID(NewID()))
	binary.BigEndian.PutUint32(b[12:], crc32.ChecksumIEEE(b[:12]))
	return hex.EncodeToString(b)
}

// KeyIDChecksumOK tells whether id is a key id with a valid checksum.
func KeyIDChecksumOK(id string) bool {
	b := []byte(RawID(id))
	return ValidID(id) && binary.BigEndian.Uint32(b[12:]) == crc32.ChecksumIEEE(b[:12])
}
