package console

import (
	"testing"
	"time"

	"github.com/acv/acv/api/contract"
)

// TestBuildChartScalesToCounts: bars are drawn on a linear axis with round ticks, so one verify
// and 1,509 never draw the same height; every bar of the range is there, refusals apart from
// successes, and a range's hours fall in its buckets.
func TestBuildChartScalesToCounts(t *testing.T) {
	end := time.Date(2026, 11, 26, 15, 0, 0, 0, time.UTC)
	hours := []contract.HourOutcomes{
		{From: end.Add(-3 * time.Hour), Success: 1, Refused: 0},
		{From: end.Add(-2 * time.Hour), Success: 1509, Refused: 12},
		{From: end.Add(-48 * time.Hour), Success: 99}, // outside 24 h
	}
	ch := buildChart(hours, rangeOf("24h"), end, "/?")
	if len(ch.Bars) != 24 || ch.Success != 1510 || ch.Refused != 12 {
		t.Fatalf("24 h: %d bars, %d successes, %d refusals", len(ch.Bars), ch.Success, ch.Refused)
	}
	one, many := ch.Bars[21], ch.Bars[22]
	if one.Success != 1 || many.Success != 1509 {
		t.Fatalf("bars in the wrong buckets: %+v %+v", one, many)
	}
	if one.SH >= many.SH/100 || one.SH < 1 {
		t.Errorf("1 verify draws %.1f, 1,509 draw %.1f: want proportional and visible", one.SH, many.SH)
	}
	if many.RH <= 0 || many.RH >= many.SH {
		t.Errorf("12 refusals draw %.1f beside 1,509 successes' %.1f", many.RH, many.SH)
	}
	if top := ch.YTicks[len(ch.YTicks)-1].Label; top != "2,000" {
		t.Errorf("y axis top %q, want 2,000", top)
	}
	week := buildChart(hours, rangeOf("7d"), end, "/?")
	if len(week.Bars) != 28 || week.Success != 1609 {
		t.Errorf("7 d: %d bars of 6 hours, %d successes", len(week.Bars), week.Success)
	}
	if rangeOf("bogus").Key != "24h" {
		t.Error("an unknown range is not the default")
	}
	small := buildChart(hours[:1], rangeOf("24h"), end, "/?")
	var labels []string
	for _, tk := range small.YTicks {
		labels = append(labels, tk.Label)
	}
	if len(labels) != 2 || labels[0] != "0" || labels[1] != "1" {
		t.Errorf("y ticks for a busiest hour of 1: %v", labels)
	}
}
