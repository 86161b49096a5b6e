package console

import (
	"fmt"
	"math"
	"net/url"
	"time"

	"github.com/acv/acv/api/contract"
	"github.com/gin-gonic/gin"
)

// chartRange is one of the time ranges a chart offers: how far back it looks (Span), how wide
// each bar is (Bucket, whole hours: the counts are kept per hour), the bar's width in the axis
// title (Unit) and the layout of a bar's start under the x axis (TickFormat).
type chartRange struct {
	Key, Label       string
	Span, Bucket     time.Duration
	Unit, TickFormat string
}

// chartRanges are the ranges offered, the default first.
var chartRanges = []chartRange{
	{Key: "24h", Label: "24 h", Span: 24 * time.Hour, Bucket: time.Hour, Unit: "per hour", TickFormat: "15:04"},
	{Key: "1h", Label: "1 h", Span: time.Hour, Bucket: time.Hour, Unit: "in the hour", TickFormat: "15:04"},
	{Key: "7d", Label: "7 d", Span: 7 * 24 * time.Hour, Bucket: 6 * time.Hour, Unit: "per 6 hours", TickFormat: "Mon 02"},
	{Key: "30d", Label: "30 d", Span: 30 * 24 * time.Hour, Bucket: 24 * time.Hour, Unit: "per day", TickFormat: "Jan 02"},
}

// rangeOf is the range a query's ?range= names, the default when it names none.
func rangeOf(key string) chartRange {
	for _, r := range chartRanges {
		if r.Key == key {
			return r
		}
	}
	return chartRanges[0]
}

// Chart geometry, in the SVG's user units, with room for the axes' labels.
const (
	chartW      = 760.0
	chartH      = 260.0
	chartLeft   = 64.0
	chartRight  = 8.0
	chartTop    = 12.0
	chartBottom = 40.0
)

// chartBar is one bucket of a chart: its counts and its two bars' geometry.
type chartBar struct {
	From, To                 time.Time
	Success, Refused         int64
	X, W, SY, SH, RX, RY, RH float64
}

// chartTick is a labelled position on an axis.
type chartTick struct {
	Pos   float64
	Label string
}

// activityChart is a verify chart as a page draws it in SVG, with links to the other ranges.
type activityChart struct {
	Range                          chartRange
	Ranges                         []chartRange
	Bars                           []chartBar
	YTicks, XTicks                 []chartTick
	Success, Refused               int64
	Link                           string // the page's URL without its range, to append "range=7d"
	W, H, Left, Right, Top, Bottom float64
}

// niceCeil is the smallest 1, 2 or 5 × 10^k at or above v: the y axis's round top.
func niceCeil(v int64) int64 {
	if v <= 1 {
		return 1
	}
	p := int64(math.Pow(10, math.Floor(math.Log10(float64(v)))))
	for _, m := range []int64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// round1 rounds a coordinate to a tenth of a unit: finer than a pixel, shorter to send.
func round1(v float64) float64 { return math.Round(v*10) / 10 }

// buildChart lays hourly outcomes out in r's buckets, ending with the hour that holds now.
func buildChart(hours []contract.HourOutcomes, r chartRange, end time.Time, link string) activityChart {
	n := int(r.Span / r.Bucket)
	start := end.Add(-r.Span)
	ch := activityChart{Range: r, Ranges: chartRanges, Link: link, W: chartW, H: chartH,
		Left: chartLeft, Right: chartW - chartRight, Top: chartTop, Bottom: chartH - chartBottom}
	ch.Bars = make([]chartBar, n)
	for i := range ch.Bars {
		ch.Bars[i].From = start.Add(time.Duration(i) * r.Bucket)
		ch.Bars[i].To = ch.Bars[i].From.Add(r.Bucket)
	}
	for _, h := range hours {
		i := int(h.From.Sub(start) / r.Bucket)
		if i < 0 || i >= n {
			continue
		}
		ch.Bars[i].Success += h.Success
		ch.Bars[i].Refused += h.Refused
		ch.Success += h.Success
		ch.Refused += h.Refused
	}
	var top int64
	for _, b := range ch.Bars {
		top = max(top, b.Success, b.Refused)
	}
	top = niceCeil(top)
	plotH := ch.Bottom - ch.Top
	slot := (ch.Right - ch.Left) / float64(n)
	w := math.Max(slot*0.4, 1)
	height := func(v int64) float64 {
		h := plotH * float64(v) / float64(top)
		if v > 0 && h < 1 {
			h = 1 // a single verify stays visible
		}
		return h
	}
	for i := range ch.Bars {
		b := &ch.Bars[i]
		x := ch.Left + slot*float64(i) + slot*0.1
		b.X, b.W, b.RX = round1(x), round1(w), round1(x+w)
		b.SH, b.RH = round1(height(b.Success)), round1(height(b.Refused))
		b.SY, b.RY = round1(ch.Bottom-b.SH), round1(ch.Bottom-b.RH)
	}
	steps := int64(4)
	if top < 4 {
		steps = top // whole verifies only: 0 and 1, or 0, 1 and 2
	}
	for k := int64(0); k <= steps; k++ {
		ch.YTicks = append(ch.YTicks, chartTick{Pos: round1(ch.Bottom - plotH*float64(k)/float64(steps)), Label: thousands(top * k / steps)})
	}
	every := max(n/6, 1)
	for i := 0; i < n; i += every {
		ch.XTicks = append(ch.XTicks, chartTick{Pos: round1(ch.Left + slot*float64(i) + slot/2), Label: ch.Bars[i].From.UTC().Format(r.TickFormat)})
	}
	return ch
}

// chartFor lays out the verify outcomes of a project ("" for all) over the ?range= asked for;
// link is the page's URL with its other parameters, ending in "?" or "&".
func (s *Server) chartFor(c *gin.Context, se *Session, projectID, link string) (activityChart, error) {
	r := rangeOf(c.Query("range"))
	end := s.svc.now().UTC().Truncate(time.Hour).Add(time.Hour)
	hours, err := s.st.OutcomesByHour(c.Request.Context(), projectID, end.Add(-r.Span), end)
	if err != nil {
		return activityChart{}, fmt.Errorf("console: verify outcomes: %w", err)
	}
	return buildChart(hours, r, end, link), nil
}

// rangeLink is a page's URL with q's parameters except range, ready for one to be appended.
func rangeLink(path string, q url.Values) string {
	k := url.Values{}
	for name, v := range q {
		if name != "range" && name != "done" && name != "n" {
			k[name] = v
		}
	}
	if len(k) == 0 {
		return path + "?"
	}
	return path + "?" + k.Encode() + "&"
}
