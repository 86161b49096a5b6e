package contract

import (
	"encoding/hex"
	"fmt"
	"hash/fnv"

	"github.com/google/uuid"
)

// Shards is the number of Redis hash-tag shards. Every key of one project lives in the shard
// of its project id, so one Lua call touches one Redis Cluster slot, and the relay reads a
// known, fixed set of outbox streams. Changing it moves every key: it is part of the data format.
const Shards = 16

// Shard is the hash-tag shard of a project.
func Shard(projectID string) int {
	h := fnv.New32a()
	h.Write([]byte(projectID))
	return int(h.Sum32() % Shards)
}

// ShardTag is the prefix of every Redis key of a shard, hash tag included: "acv:{NN}:".
func ShardTag(shard int) string {
	return fmt.Sprintf("acv:{%02d}:", shard)
}

// OutboxKey is the key of a shard's outbox stream. It shares the shard's hash tag, so a script
// can change a code and append its event atomically on Redis Cluster; the cache writes it and
// the audit relay reads all Shards of them.
func OutboxKey(shard int) string {
	return ShardTag(shard) + "outbox"
}

// NewID returns a time-ordered UUIDv7 as 32 lowercase hex characters, so ids sort by creation.
func NewID() string {
	u, err := uuid.NewV7()
	if err != nil {
		// NewV7 fails only when crypto/rand does; nothing can be identified without it.
		panic(fmt.Sprintf("generate uuidv7: %v", err))
	}
	return hex.EncodeToString(u[:])
}

// ValidID tells whether s has the wire form of an id: 32 lowercase hex characters.
func ValidID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
