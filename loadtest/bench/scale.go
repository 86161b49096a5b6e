package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/acv/acv/api/client"
	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/admin"
)

// scale fills one project with b.scaleN codes and measures what the data-scale targets name:
// generation time per million (both stores loaded), Redis memory per code, verify latency
// against the small project of the same run, and the p99 of every read the API offers.
func (b *bench) scale(ctx context.Context) error {
	a := &admin.Admin{Store: b.deps.Store, Cache: b.deps.Cache, Keys: b.cfg.MasterKeys}
	big, err := a.CreateProject(ctx, contract.NewProject{Name: "scale"})
	if err != nil {
		return err
	}
	key, err := a.CreateAPIKey(ctx, big.ID, 0, 0)
	if err != nil {
		return err
	}
	rdb := b.deps.Redis
	mem0 := usedMemory(ctx, rdb)
	past := time.Now().Add(-time.Hour).Unix()
	const chunk = 1_000_000
	var firstMillion time.Duration
	start := time.Now()
	for done := 0; done < b.scaleN; {
		n := min(chunk, b.scaleN-done)
		spec := contract.GenerateSpec{Count: n, Length: 12}
		if done == 0 {
			// One code in a hundred of the first million has expired, so the expired filter has
			// something to find among millions that have not.
			spec.Count = n - n/100
			if _, err := a.Generate(ctx, big.ID, contract.GenerateSpec{Count: n / 100, Length: 12, ExpiresAt: &past}, nil); err != nil {
				return err
			}
		}
		t0 := time.Now()
		if _, err := a.Generate(ctx, big.ID, spec, nil); err != nil {
			return err
		}
		if done == 0 {
			firstMillion = time.Since(start)
		}
		done += n
		fmt.Fprintf(os.Stderr, "bench: scale: %d codes (%.1f s for the last %d)\n", done, time.Since(t0).Seconds(), n)
	}
	perCode := float64(usedMemory(ctx, rdb)-mem0) / float64(b.scaleN)
	b.rows = append(b.rows, row{name: fmt.Sprintf("Generate %d codes into Postgres and Redis", b.scaleN), rps: float64(b.scaleN) / time.Since(start).Seconds(),
		note: fmt.Sprintf("first 1,000,000 in %.1f s; Redis %.0f bytes per code", firstMillion.Seconds(), perCode)})

	p, err := b.startACV(ctx, "api,relay,consumer")
	if err != nil {
		return err
	}
	defer p.stop()
	cl := &client.Client{BaseURL: p.base, KeyID: key.ID, Secret: key.Secret}
	small := &client.Client{BaseURL: p.base, KeyID: b.keyID, Secret: b.secret}

	// Some of every state: used (verified through the API), disabled (admin).
	page, err := cl.ListCodes(ctx, big.ID, client.ListParams{Page: 1, PageSize: 100, Status: "unused"})
	if err != nil {
		return err
	}
	for i, c := range page.Items {
		if i%2 == 0 {
			if _, _, err := cl.Verify(ctx, big.ID, contract.VerifyRequest{Code: c.Code}, client.Options{}); err != nil {
				return err
			}
		} else if err := a.SetCodeDisabled(ctx, big.ID, c.Code, true); err != nil {
			return err
		}
	}
	if err := b.waitDrained(ctx, time.Minute); err != nil {
		return err
	}

	// Verify latency, one request at a time, small project against the big one.
	verifyLat := func(c *client.Client, projectID string, codes []string) []time.Duration {
		var out []time.Duration
		for _, v := range codes {
			t0 := time.Now()
			_, _, err := c.Verify(ctx, projectID, contract.VerifyRequest{Code: v}, client.Options{})
			if err == nil {
				out = append(out, time.Since(t0))
			}
		}
		return out
	}
	bigCodes, err := b.sampleCodes(ctx, cl, big.ID, 300)
	if err != nil {
		return err
	}
	smallLat := verifyLat(small, b.projectID, b.take(300))
	bigLat := verifyLat(cl, big.ID, bigCodes)
	b.addLatency(fmt.Sprintf("verify, project with %d codes (sequential)", b.codes), smallLat, "")
	b.addLatency(fmt.Sprintf("verify, project with %d codes (sequential)", b.scaleN), bigLat, "")

	st, err := cl.Project(ctx, big.ID)
	if err != nil {
		return err
	}
	last := int((st.Statistics.TotalCodes + 19) / 20)
	queries := []struct {
		name string
		fn   func(i int) error
	}{
		{"project with statistics", func(int) error { _, err := cl.Project(ctx, big.ID); return err }},
		{"list, first page", func(int) error { _, err := cl.ListCodes(ctx, big.ID, client.ListParams{Page: 1}); return err }},
		{"list, middle page", func(int) error { _, err := cl.ListCodes(ctx, big.ID, client.ListParams{Page: last / 2}); return err }},
		{"list, last page", func(int) error { _, err := cl.ListCodes(ctx, big.ID, client.ListParams{Page: last}); return err }},
		{"list, random deep page", func(int) error {
			_, err := cl.ListCodes(ctx, big.ID, client.ListParams{Page: 1 + rand.IntN(last)})
			return err
		}},
	}
	for _, s := range []string{"unused", "used", "disabled", "expired"} {
		queries = append(queries, struct {
			name string
			fn   func(i int) error
		}{"list, status=" + s + ", first page", func(int) error {
			_, err := cl.ListCodes(ctx, big.ID, client.ListParams{Page: 1, Status: s})
			return err
		}})
	}
	for _, n := range []int{3, 4, 6} {
		queries = append(queries, struct {
			name string
			fn   func(i int) error
		}{"search, " + strconv.Itoa(n) + " characters", func(i int) error {
			v := bigCodes[i%len(bigCodes)]
			_, err := cl.ListCodes(ctx, big.ID, client.ListParams{Page: 1, Search: strings.ToLower(v[3 : 3+n])})
			return err
		}})
	}
	queries = append(queries, struct {
		name string
		fn   func(i int) error
	}{"code by value, with history", func(i int) error {
		_, err := cl.CodeByValue(ctx, big.ID, bigCodes[i%len(bigCodes)])
		return err
	}})
	for _, q := range queries {
		var lat []time.Duration
		for i := 0; i < 100; i++ {
			t0 := time.Now()
			if err := q.fn(i); err != nil {
				return fmt.Errorf("%s: %w", q.name, err)
			}
			lat = append(lat, time.Since(t0))
		}
		b.addLatency(q.name+fmt.Sprintf(" (%d codes)", b.scaleN), lat, "100 sequential requests")
	}
	return nil
}

// sampleCodes returns n unused codes of a project, from pages spread over the list.
func (b *bench) sampleCodes(ctx context.Context, cl *client.Client, projectID string, n int) ([]string, error) {
	var out []string
	for page := 2; len(out) < n; page += 997 {
		p, err := cl.ListCodes(ctx, projectID, client.ListParams{Page: page, PageSize: 100, Status: "unused"})
		if err != nil {
			return nil, err
		}
		if len(p.Items) == 0 {
			break
		}
		for _, c := range p.Items[:min(len(p.Items), 50)] {
			out = append(out, c.Code)
		}
	}
	return out[:min(n, len(out))], nil
}

func (b *bench) addLatency(name string, lat []time.Duration, note string) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	ms := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.rows = append(b.rows, row{name: name, p50: ms(0.5), p99: ms(0.99), note: note})
}

func usedMemory(ctx context.Context, rdb redis.UniversalClient) int64 {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}
