package store

import (
	"encoding/hex"
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"
)

// hexUUIDCodec is pgx's uuid codec, taught to send an id given as a string in the binary
// format: pgx's own plans fail on it first and retry as text, costly for the consumer's ids.
type hexUUIDCodec struct{ pgtype.UUIDCodec }

func (c hexUUIDCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(string); ok && format == pgtype.BinaryFormatCode {
		return encodeHexUUID{}
	}
	return c.UUIDCodec.PlanEncode(m, oid, format, value)
}

type encodeHexUUID struct{}

// Encode appends the 16 bytes of a uuid written as 32 hex digits, dashed or not. Anything else
// is an error, on which pgx tries the text format, whose parser words the refusal.
func (encodeHexUUID) Encode(value any, buf []byte) ([]byte, error) {
	s := value.(string)
	if len(s) == 36 && s[8] == '-' && s[13] == '-' && s[18] == '-' && s[23] == '-' {
		s = s[:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	}
	var id [16]byte
	if len(s) != 32 {
		return nil, fmt.Errorf("uuid %q: not 32 hex digits", s)
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return nil, fmt.Errorf("uuid %q: %w", s, err)
	}
	return append(buf, id[:]...), nil
}

// registerHexUUID installs hexUUIDCodec for uuid and uuid[] in a type map.
func registerHexUUID(m *pgtype.Map) {
	t := &pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: hexUUIDCodec{}}
	m.RegisterType(t)
	m.RegisterType(&pgtype.Type{Name: "_uuid", OID: pgtype.UUIDArrayOID, Codec: &pgtype.ArrayCodec{ElementType: t}})
}
