// Package keyslot is Redis Cluster's key-to-slot function and redis-cli's slot ranges, shared
// by the cache's choice of shard hash tags and the tests that check it.
package keyslot

import "math"

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

// MasterStarts is the first slot of each of n masters' ranges as `redis-cli --cluster create`
// assigns them (clusterManagerCommandCreate in redis-cli.c): n contiguous ranges of Slots/n
// slots, each ending at the rounded running total.
func MasterStarts(n int) []int {
	per := float64(Slots) / float64(n)
	first, cursor := 0, 0.0
	out := make([]int, 0, n)
	for i := 0; i < n; i++ {
		last := int(math.Round(cursor + per - 1))
		if last > Slots || i == n-1 {
			last = Slots - 1
		}
		if last < first {
			last = first
		}
		out = append(out, first)
		first = last + 1
		cursor += per
	}
	return out
}
