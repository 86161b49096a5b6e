package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
)

// readEndpoints are readmix's reads: each sends one request and returns its answer's checks.
var readEndpoints = map[string]readFunc{
	"project":     readProject,
	"list_unused": listOf("list_unused", "unused", false),
	"list_used":   listOf("list_used", "used", true),
	"list_page": func(x *run, ctx context.Context, codes []Code) (answer, []check) {
		size := randomPageSize()
		page := 1 + rand.IntN(max(1, int(math.Ceil(float64(len(codes))/float64(size)))))
		return list(x, ctx, "list_page", "", "", page, size, func(object) bool { return true })
	},
	"search": readSearch,
	"by_id": func(x *run, ctx context.Context, codes []Code) (answer, []check) {
		row := randomCode(codes)
		return theCode(x.send(ctx, phaseLoad, "by_id", http.MethodGet, x.projectPath()+"/codes/"+url.PathEscape(row.ID), nil), row)
	},
	"by_code": func(x *run, ctx context.Context, codes []Code) (answer, []check) {
		row := randomCode(codes)
		return theCode(x.codeByValue(ctx, phaseLoad, "by_code", row.Value), row)
	},
}

type readFunc func(x *run, ctx context.Context, codes []Code) (answer, []check)

// readMix is loadtest/k6/readmix.js: an open model of s.Rate reads per second, picked by the
// weights of s.Mix, each answer checked against the shape the contract promises; each read's
// p(95) must stay below the P95 limit too.
func (x *run) readMix(ctx context.Context, s ScenarioSettings) error {
	codes := x.r.Codes
	if len(codes) == 0 {
		return errors.New("readmix needs codes in the export (any state)")
	}
	total := 0.0
	for _, e := range s.Mix {
		total += e.Weight
	}
	if total <= 0 {
		return errors.New("readmix needs a mix with a positive weight")
	}
	x.logf("readmix: %g reads/s for %s, mix %v, %d known codes", s.Rate, s.Duration, s.Mix, len(codes))

	x.open(ctx, s.Rate, s.Duration, max(s.VUs, s.MaxVUs), func(int, int64) {
		pick := rand.Float64() * total
		e := s.Mix[len(s.Mix)-1]
		for _, m := range s.Mix {
			if pick < m.Weight {
				e = m
				break
			}
			pick -= m.Weight
		}
		a, checks := readEndpoints[e.Name](x, ctx, codes)
		for i := range checks {
			checks[i].name = e.Name + ": " + checks[i].name
		}
		if !a.interrupted {
			x.checks(e.Name, a, checks...)
		}
	})
	if iterations(s.Rate, s.Duration) == 0 {
		x.notes = append(x.notes, fmt.Sprintf("readmix: a rate of %g/s for %s starts no read", s.Rate, s.Duration))
	}

	x.expect("dropped_iterations", "<=", math.Floor(s.MaxDroppedRate*s.Rate*s.Duration.Seconds()))
	for _, e := range s.Mix {
		x.endpointP95(e.Name, s.Limits.P95Ms)
	}
	return nil
}

func randomCode(codes []Code) Code { return codes[rand.IntN(len(codes))] }

func randomPageSize() int { return []int{10, 20, 50, 100}[rand.IntN(4)] }

func readProject(x *run, ctx context.Context, _ []Code) (answer, []check) {
	a := x.send(ctx, phaseLoad, "project", http.MethodGet, x.projectPath(), nil)
	p := a.decode()
	s, _ := p["statistics"].(map[string]any)
	adds := s != nil
	var n [5]int64
	for i, k := range []string{"total_codes", "used_codes", "unused_codes", "disabled_codes", "expired_codes"} {
		v, ok := object(s).integer(k)
		adds = adds && ok && v >= 0
		n[i] = v
	}
	return a, []check{
		{"status 200", a.status == 200},
		{"project is the key's", p != nil && p.str("id") == x.r.Target.ProjectID && is[string](p, "name") && is[bool](p, "status") && p.isNullOrInt("expires_at") && p.isInt("created_at")},
		{"statistics add up", adds && n[0] == n[1]+n[2]+n[3]+n[4]},
	}
}

// list reads a page of codes and checks the answer: its shape, paging fields consistent with
// the page and size asked for, and every item a code without logs that itemOK accepts.
func list(x *run, ctx context.Context, endpoint, status, search string, page, size int, itemOK func(object) bool) (answer, []check) {
	a := x.listCodes(ctx, endpoint, status, search, page, size)
	b := a.decode()
	items, isArray := b["items"].([]any)
	total, totalOK := b.integer("total")
	pages, pagesOK := b.integer("total_pages")
	gotPage, _ := b.integer("page")
	gotSize, _ := b.integer("page_size")
	inFilter := isArray
	for _, it := range items {
		m, ok := it.(map[string]any)
		_, logs := m["verification_logs"]
		inFilter = inFilter && ok && codeShape(m) && !logs && itemOK(m)
	}
	shape := b != nil && isArray && totalOK && pagesOK
	return a, []check{
		{"status 200", a.status == 200},
		{"page shape", shape},
		{"paging consistent", shape && gotPage == int64(page) && gotSize == int64(size) &&
			pages == int64(math.Ceil(float64(total)/float64(size))) && len(items) <= size},
		{"items match the filter", inFilter},
	}
}

// listOf reads one of the first few pages (most hold items) of the codes of status.
func listOf(endpoint, status string, used bool) readFunc {
	return func(x *run, ctx context.Context, _ []Code) (answer, []check) {
		return list(x, ctx, endpoint, status, "", 1+rand.IntN(3), randomPageSize(), func(c object) bool {
			return c["status"] == used && c["is_disabled"] == false && c["is_expired"] == false
		})
	}
}

func readSearch(x *run, ctx context.Context, codes []Code) (answer, []check) {
	value := []rune(randomCode(codes).Value)
	n := min(len(value), 3+rand.IntN(4))
	at := rand.IntN(len(value) - n + 1)
	term := string(value[at : at+n])
	if rand.IntN(2) == 0 {
		term = strings.ToLower(term)
	}
	a, checks := list(x, ctx, "search", "", term, 1, randomPageSize(), func(c object) bool {
		return strings.Contains(strings.ToLower(c.str("code")), strings.ToLower(term))
	})
	total, _ := a.decode().integer("total")
	return a, append(checks, check{"search finds the code", total >= 1})
}

// theCode checks a single-code answer: that code, with its logs.
func theCode(a answer, row Code) (answer, []check) {
	c := a.decode()
	return a, []check{
		{"status 200", a.status == 200},
		{"the code, with its logs", codeShape(c) && c.str("id") == row.ID && c.str("code") == row.Value && is[[]any](c, "verification_logs")},
	}
}
