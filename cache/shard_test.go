package cache_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/cache"
	"github.com/acv/acv/internal/localenv"
	"github.com/acv/acv/internal/testkit"
)

// Shard i's hash tag lies in the i-th equal slice of the 16384 slots, so equal slot ranges
// hold equal numbers of shards; tags are distinct, two characters, and never hold a brace.
func TestShardTagsFallInTheirSlice(t *testing.T) {
	if crc16("123456789") != 0x31c3 {
		t.Fatal("crc16 is not CRC16-XMODEM")
	}
	per := 16384 / cache.Shards
	if per*cache.Shards != 16384 {
		t.Fatalf("Shards %d does not divide the 16384 slots", cache.Shards)
	}
	seen := map[string]int{}
	for s := 0; s < cache.Shards; s++ {
		tag := cache.ShardHashTag(s)
		if len(tag) != 2 || strings.ContainsAny(tag, "{}") {
			t.Fatalf("shard %d: tag %q", s, tag)
		}
		if other, dup := seen[tag]; dup {
			t.Fatalf("shards %d and %d share the tag %q", other, s, tag)
		}
		seen[tag] = s
		if slot := slotOf(tag); slot < s*per || slot >= (s+1)*per {
			t.Errorf("shard %d: tag %q is in slot %d, outside [%d, %d)", s, tag, slot, s*per, (s+1)*per)
		}
		if p := cache.ShardPrefix(s); p != "acv:{"+tag+"}:" {
			t.Errorf("shard %d: prefix %q", s, p)
		}
	}
	if n := len(cache.Outboxes()); n != cache.Shards {
		t.Fatalf("%d outboxes, want one a shard", n)
	}
}

// maxMasters is the largest cluster whose masters the tags are placed for.
const maxMasters = 30

// chooseShardTags picks each shard's tag as layout.go describes it: of the two-character tags
// that need no quoting, the one whose slot is nearest its slice's centre and on the centre's
// side of every master boundary of 1 to maxMasters masters.
func chooseShardTags() [cache.Shards]string {
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	const per = clusterSlots / cache.Shards
	var starts [maxMasters][]int
	for n := range starts {
		starts[n] = masterStarts(n + 1)
	}
	var tags [cache.Shards]string
	var dist [cache.Shards]int
	for _, a := range alphabet {
		for _, b := range alphabet {
			t := string(a) + string(b)
			slot := slotOf(t)
			s := slot / per
			centre := s*per + per/2
			if !sameMaster(starts[:], slot, centre) {
				continue
			}
			if d := max(slot-centre, centre-slot); tags[s] == "" || d < dist[s] {
				tags[s], dist[s] = t, d
			}
		}
	}
	return tags
}

// sameMaster tells whether two slots belong to the same master in every cluster of starts.
func sameMaster(starts [][]int, a, b int) bool {
	for _, st := range starts {
		if sort.SearchInts(st, a+1) != sort.SearchInts(st, b+1) {
			return false
		}
	}
	return true
}

// The table every stored key was written with is the one the placement rule chooses.
func TestShardTagsArePinned(t *testing.T) {
	for s, want := range chooseShardTags() {
		if got := cache.ShardHashTag(s); got != want {
			t.Errorf("shard %d: tag %q, the placement rule chooses %q", s, got, want)
		}
	}
}

// ShardOf runs on every verify: it must allocate nothing, be a function of (project, value)
// alone, and spread one project's codes evenly.
func TestShardOfSpreadsCodesEvenly(t *testing.T) {
	pid := contract.NewID()
	if n := testing.AllocsPerRun(1000, func() { _ = cache.ShardOf(pid, "SUMMER-2024-0001") }); n != 0 {
		t.Fatalf("ShardOf allocates %v times a call", n)
	}
	if cache.ShardOf(pid, "A") != cache.ShardOf(strings.ToUpper(pid), "A") {
		t.Error("the shard depends on the case of the project id's hex, which names the same 16 bytes")
	}
	const codes = 256_000
	counts := make([]int, cache.Shards)
	for i := 0; i < codes; i++ {
		s := cache.ShardOf(pid, fmt.Sprintf("CODE-%08d", i))
		if s < 0 || s >= cache.Shards {
			t.Fatalf("shard %d out of range", s)
		}
		counts[s]++
	}
	mean := codes / cache.Shards
	for s, n := range counts {
		// 1000 a shard on average: five standard deviations is about ±16%.
		if n < mean*84/100 || n > mean*116/100 {
			t.Errorf("shard %d holds %d of %d codes, mean %d", s, n, codes, mean)
		}
	}
	// Sequential ids of another project spread as well: a project's id is no shard of its own.
	other := make(map[int]bool)
	for i := 0; i < 2000; i++ {
		other[cache.ShardOf(contract.NewID(), "SAME-VALUE")] = true
	}
	if len(other) < cache.Shards*9/10 {
		t.Errorf("one value in 2000 projects reached only %d shards", len(other))
	}
}

// With the slot ranges redis-cli gives 1 to 30 masters, each master holds floor or ceil of
// Shards/masters shards: 85 or 86 of 3, 8 or 9 of 30.
func TestShardsSpreadEvenlyOverAnyMasterCount(t *testing.T) {
	for n := 1; n <= 30; n++ {
		starts := masterStarts(n)
		held := make([]int, n)
		for s := 0; s < cache.Shards; s++ {
			slot := slotOf(cache.ShardHashTag(s))
			m := sort.SearchInts(starts, slot+1) - 1
			held[m]++
		}
		lo, hi := cache.Shards/n, (cache.Shards+n-1)/n
		for m, h := range held {
			if h < lo || h > hi {
				t.Errorf("%d masters: master %d (from slot %d) holds %d shards, want %d..%d", n, m, starts[m], h, lo, hi)
			}
		}
	}
}

// On a real 3-master cluster made by redis-cli: Redis computes each tag's slot as the table
// says, and every master holds 85 or 86 of the 256 shards.
func TestShardsSpreadEvenlyOverClusterMasters(t *testing.T) {
	c := testkit.RedisCluster(t, localenv.ClusterOptions{})
	ctx := context.Background()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { rdb.Close() })
	per := 16384 / cache.Shards
	pipe := rdb.Pipeline()
	slots := make([]*redis.IntCmd, cache.Shards)
	for s := range slots {
		slots[s] = pipe.ClusterKeySlot(ctx, cache.ShardPrefix(s)+"c:x")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	masters, ranges, err := c.Masters()
	if err != nil || len(masters) != 3 {
		t.Fatalf("masters %v: %v", masters, err)
	}
	owned := make([]int, len(masters))
	for s, cmd := range slots {
		slot := int(cmd.Val())
		if slot < s*per || slot >= (s+1)*per {
			t.Fatalf("redis puts shard %d's keys in slot %d, outside [%d, %d)", s, slot, s*per, (s+1)*per)
		}
		for m, rs := range ranges {
			for _, r := range rs {
				lo, hi, _ := strings.Cut(r, "-")
				a, _ := strconv.Atoi(lo)
				b, _ := strconv.Atoi(hi)
				if slot >= a && slot <= b {
					owned[m]++
				}
			}
		}
	}
	for m, n := range owned {
		if n < cache.Shards/3 || n > cache.Shards/3+1 {
			t.Errorf("master %s (slots %v) holds %d shards, want %d or %d", masters[m].Addr, ranges[m], n, cache.Shards/3, cache.Shards/3+1)
		}
	}
}
