package cache_test

// Redis Cluster's key-to-slot function and redis-cli's slot ranges, which the shard hash tags
// are checked against.

import "math"

// clusterSlots is the number of Redis Cluster hash slots.
const clusterSlots = 16384

// crc16 is Redis Cluster's key hash: CRC16-XMODEM (polynomial 0x1021, initial value 0).
func crc16(s string) uint16 {
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

// slotOf is the slot of a hash tag (or of a key without one).
func slotOf(tag string) int { return int(crc16(tag) % clusterSlots) }

// masterStarts is the first slot of each of n masters' ranges as `redis-cli --cluster create`
// assigns them (clusterManagerCommandCreate in redis-cli.c): n contiguous ranges of clusterSlots/n
// slots, each ending at the rounded running total.
func masterStarts(n int) []int {
	per := float64(clusterSlots) / float64(n)
	first, cursor := 0, 0.0
	out := make([]int, 0, n)
	for i := 0; i < n; i++ {
		last := int(math.Round(cursor + per - 1))
		if last > clusterSlots || i == n-1 {
			last = clusterSlots - 1
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
