package loadgen

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
)

// readEndpoints are readmix's reads: each sends one request and returns its answer's checks.
var readEndpoints = map[string]readFunc{
	"project":     readProject,
	"list_unused": listOf("list_unused", "unused", false),
	"list_used":   listOf("list_used", "used", true),
	"list_page":   readListPage,
	"search":      readSearch,
	"by_id": func(x *run, ctx context.Context, codes []Code) (answer, []namedCheck) {
		row := randomCode(codes)
		return theCode(x.send(ctx, phaseLoad, "by_id", http.MethodGet, x.projectPath()+"/codes/"+escape(row.ID), nil), row)
	},
	"by_code": func(x *run, ctx context.Context, codes []Code) (answer, []namedCheck) {
		row := randomCode(codes)
		return theCode(x.codeByValue(ctx, phaseLoad, "by_code", row.Value), row)
	},
}

type readFunc func(x *run, ctx context.Context, codes []Code) (answer, []namedCheck)

var pageSizes = []int{10, 20, 50, 100}

// readMix is loadtest/k6/readmix.js: an open model of s.Rate reads per second, picked by the
// weights of s.Mix, each answer checked against the shape the contract promises; each read's
// p(95) must stay below the P95 limit too.
func (x *run) readMix(ctx context.Context, s ReadMixSettings) error {
	codes := x.r.Codes
	if len(codes) == 0 {
		return errors.New("readmix needs codes in the export (any state)")
	}
	total := 0.0
	for _, e := range s.Mix {
		total += e.Weight
	}
	if len(s.Mix) == 0 || total <= 0 {
		return errors.New("readmix needs a mix with a positive weight")
	}
	needed := iterations(s.Rate, s.Duration)
	maxDropped := math.Floor(s.MaxDroppedRate * s.Rate * s.Duration.Seconds())
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
		if a.interrupted {
			return
		}
		named := make([]namedCheck, len(checks))
		for i, c := range checks {
			named[i] = namedCheck{e.Name + ": " + c.name, c.ok}
		}
		if !x.checkAll(named...) {
			x.unexpected(e.Name, a)
		}
	})
	if needed == 0 {
		x.note("readmix: a rate of %g/s for %s starts no read", s.Rate, s.Duration)
	}

	x.standard(s.Limits)
	x.expect("unexpected_failures", "==", 0)
	x.expect("dropped_iterations", "<=", maxDropped)
	for _, e := range s.Mix {
		x.endpointP95(e.Name, s.Limits.P95Ms)
	}
	return nil
}

func randomCode(codes []Code) Code { return codes[rand.IntN(len(codes))] }

func randomPageSize() int { return pageSizes[rand.IntN(len(pageSizes))] }

func readProject(x *run, ctx context.Context, _ []Code) (answer, []namedCheck) {
	a := x.send(ctx, phaseLoad, "project", http.MethodGet, x.projectPath(), nil)
	p := a.decode()
	id := p.str("id")
	s, _ := p["statistics"].(map[string]any)
	adds := s != nil
	var n [5]int64
	for i, k := range []string{"total_codes", "used_codes", "unused_codes", "disabled_codes", "expired_codes"} {
		v, ok := object(s).integer(k)
		adds = adds && ok && v >= 0
		n[i] = v
	}
	return a, []namedCheck{
		{"status 200", a.status == 200},
		{"project is the key's", p != nil && id == x.r.Target.ProjectID && is[string](p, "name") && is[bool](p, "status") && p.isNullOrInt("expires_at") && p.isInt("created_at")},
		{"statistics add up", adds && n[0] == n[1]+n[2]+n[3]+n[4]},
	}
}

// pageChecks are the checks of a list answer: its shape, paging fields consistent with the
// page and size asked for, and every item a code without logs that itemOK accepts.
func pageChecks(a answer, b object, page, size int, itemOK func(object) bool) []namedCheck {
	items, isArray := b["items"].([]any)
	total, totalOK := b.integer("total")
	pages, pagesOK := b.integer("total_pages")
	gotPage, _ := b.integer("page")
	gotSize, _ := b.integer("page_size")
	inFilter := isArray
	for _, it := range items {
		m, ok := it.(map[string]any)
		c := object(m)
		inFilter = inFilter && ok && codeShape(c) && !c.has("verification_logs") && itemOK(c)
	}
	return []namedCheck{
		{"status 200", a.status == 200},
		{"page shape", b != nil && isArray && totalOK && pagesOK},
		{"paging consistent", b != nil && isArray && totalOK && pagesOK && gotPage == int64(page) && gotSize == int64(size) &&
			pages == int64(math.Ceil(float64(total)/float64(size))) && len(items) <= size},
		{"items match the filter", inFilter},
	}
}

func list(x *run, ctx context.Context, endpoint, status string, page, size int, itemOK func(object) bool) (answer, []namedCheck) {
	a := x.listCodes(ctx, phaseLoad, endpoint, [2]string{"status", status}, [2]string{"page", strconv.Itoa(page)},
		[2]string{"page_size", strconv.Itoa(size)})
	return a, pageChecks(a, a.decode(), page, size, itemOK)
}

// listOf reads one of the first few pages (most hold items) of the codes of status.
func listOf(endpoint, status string, used bool) readFunc {
	return func(x *run, ctx context.Context, _ []Code) (answer, []namedCheck) {
		return list(x, ctx, endpoint, status, 1+rand.IntN(3), randomPageSize(), func(c object) bool {
			return c["status"] == used && c["is_disabled"] == false && c["is_expired"] == false
		})
	}
}

func readListPage(x *run, ctx context.Context, codes []Code) (answer, []namedCheck) {
	size := randomPageSize()
	page := 1 + rand.IntN(max(1, int(math.Ceil(float64(len(codes))/float64(size)))))
	return list(x, ctx, "list_page", "", page, size, func(object) bool { return true })
}

func readSearch(x *run, ctx context.Context, codes []Code) (answer, []namedCheck) {
	value := []rune(randomCode(codes).Value)
	n := min(len(value), 3+rand.IntN(4))
	at := rand.IntN(len(value) - n + 1)
	term := string(value[at : at+n])
	if rand.IntN(2) == 0 {
		term = strings.ToLower(term)
	}
	size := randomPageSize()
	a := x.listCodes(ctx, phaseLoad, "search", [2]string{"search", term}, [2]string{"page", "1"}, [2]string{"page_size", strconv.Itoa(size)})
	b := a.decode()
	checks := pageChecks(a, b, 1, size, func(c object) bool {
		return strings.Contains(strings.ToLower(c.str("code")), strings.ToLower(term))
	})
	total, _ := b.integer("total")
	return a, append(checks, namedCheck{"search finds the code", b != nil && total >= 1})
}

// theCode checks a single-code answer: that code, with its logs.
func theCode(a answer, row Code) (answer, []namedCheck) {
	c := a.decode()
	return a, []namedCheck{
		{"status 200", a.status == 200},
		{"the code, with its logs", codeShape(c) && c.str("id") == row.ID && c.str("code") == row.Value && is[[]any](c, "verification_logs")},
	}
}
