package contract

import (
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
)

// An API key id is 32 lowercase hex characters like every id, but its last 8 are a CRC-32 of
// the first 24, as GitHub's tokens carry a checksum: a server can tell a made-up key id from
// one it may have issued without asking any store, so a flood of random X-API-Key values costs
// no database query. The first 12 bytes are the head of a UUIDv7, so key ids still sort by
// creation. Key ids issued before the checksum existed fail it; they stay valid for as long as
// the key mirror (Redis) holds them, which every replica fills at start.

// NewKeyID returns a fresh API key id with its checksum.
func NewKeyID() string {
	var b [16]byte
	if _, err := hex.Decode(b[:], []byte(NewID())); err != nil {
		panic(err) // NewID is always 32 hex characters
	}
	binary.BigEndian.PutUint32(b[12:], crc32.ChecksumIEEE(b[:12]))
	return hex.EncodeToString(b[:])
}

// KeyIDChecksumOK tells whether id is a key id with a valid checksum.
func KeyIDChecksumOK(id string) bool {
	if !ValidID(id) {
		return false
	}
	var b [16]byte
	if _, err := hex.Decode(b[:], []byte(id)); err != nil {
		return false
	}
	return binary.BigEndian.Uint32(b[12:]) == crc32.ChecksumIEEE(b[:12])
}
