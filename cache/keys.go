package cache

import (
	"encoding/hex"

	"github.com/acv/acv/api/contract"
)

// tag is the hash tag of a project's shard: every key of the project and the shard's outbox
// hash to one Redis Cluster slot, so a script may touch them together.
func tag(projectID string) string {
	return contract.ShardTag(contract.Shard(projectID))
}

// codeKey names a code's hash. The project id is written as its 16 raw bytes, not 32 hex
// characters: with millions of codes a project, the key is most of what a code costs Redis.
// The fixed width keeps the key unambiguous without a separator.
func codeKey(projectID, value string) string {
	return tag(projectID) + "c:" + rawID(projectID) + value
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

func projectKey(projectID string) string {
	return tag(projectID) + "p:" + projectID
}

func bucketKey(projectID, keyID string) string {
	return tag(projectID) + "rl:" + keyID
}

func replayKey(projectID, keyID, replay string) string {
	return tag(projectID) + "rp:" + keyID + ":" + replay
}

func idemKey(projectID, keyID, idem string) string {
	return tag(projectID) + "ik:" + keyID + ":" + idem
}
