package store

import (
	"bytes"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

// Ids given as strings encode to uuid and uuid[] in the binary format at the first try, dashed
// or not; pgx's own map cannot (it fails and falls back to text, which is what cost the
// consumer). Anything but a uuid is refused.
func TestHexUUIDBinaryEncoding(t *testing.T) {
	const (
		plain  = "0190f3a2b4c57d8e9fa0b1c2d3e4f506"
		dashed = "0190f3a2-b4c5-7d8e-9fa0-b1c2d3e4f506"
	)
	want := []byte{0x01, 0x90, 0xf3, 0xa2, 0xb4, 0xc5, 0x7d, 0x8e, 0x9f, 0xa0, 0xb1, 0xc2, 0xd3, 0xe4, 0xf5, 0x06}
	if _, err := pgtype.NewMap().Encode(pgtype.UUIDOID, pgtype.BinaryFormatCode, plain, nil); err == nil {
		t.Log("pgx's own map now encodes a string uuid in binary; hexUUIDCodec may be unneeded")
	}
	m := pgtype.NewMap()
	registerHexUUID(m)
	for _, s := range []string{plain, dashed} {
		got, err := m.Encode(pgtype.UUIDOID, pgtype.BinaryFormatCode, s, nil)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("encode %q: %x, %v; want %x", s, got, err, want)
		}
	}
	arr, err := m.Encode(pgtype.UUIDArrayOID, pgtype.BinaryFormatCode, []string{plain, dashed}, nil)
	if err != nil || !bytes.HasSuffix(arr, append(append([]byte{0, 0, 0, 16}, want...), append([]byte{0, 0, 0, 16}, want...)...)) {
		t.Errorf("encode uuid[]: %x, %v", arr, err)
	}
	for _, bad := range []string{"", "xyz", plain[:31], plain + "0", "0190f3a2-b4c5-7d8e-9fa0-b1c2d3e4f5zz", "0190f3a2b4c5-7d8e-9fa0-b1c2d3e4f5060"} {
		if got, err := m.Encode(pgtype.UUIDOID, pgtype.BinaryFormatCode, bad, nil); err == nil {
			t.Errorf("encode %q: %x, want an error", bad, got)
		}
	}
}
