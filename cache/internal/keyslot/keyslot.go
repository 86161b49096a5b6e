// Package keyslot is Redis Cluster's key-to-slot function, shared by the generator of the
// shards' hash tags (cache/internal/gentags) and the test that checks the generated table, so
// both compute slots with the same code; the test checks that code against the standard check
// value and against Redis's own CLUSTER KEYSLOT.
package keyslot

// Slots is the number of Redis Cluster hash slots.
const Slots = 16384

// CRC16 is Redis Cluster's key hash: CRC16-XMODEM (polynomial 0x1021, initial value 0).
func CRC16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// Of is the slot of a hash tag (or of a key without one).
func Of(tag string) int { return int(CRC16(tag) % Slots) }
