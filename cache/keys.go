package cache

import (
	"fmt"

	"github.com/acv/acv/api"
)

// tag is the hash tag of a project's shard: every key of the project and the shard's outbox
// hash to one Redis Cluster slot, so a script may touch them together.
func tag(projectID string) string {
	return fmt.Sprintf("acv:{%02d}:", api.Shard(projectID))
}

func codeKey(projectID, value string) string {
	return tag(projectID) + "c:" + projectID + ":" + value
}

func projectKey(projectID string) string {
	return tag(projectID) + "p:" + projectID
}

// OutboxKey is the outbox stream of a shard; the audit relay reads all api.Shards of them.
func OutboxKey(shard int) string {
	return fmt.Sprintf("acv:{%02d}:outbox", shard)
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
