package console

import "time"

// bar is one bar of the dashboard's redemptions chart, in the SVG's user units.
type bar struct {
	X, Y, W, H int
	Hour       string // "15:00", the hour's start in UTC
	Count      int64
}

// Chart geometry: 24 bars in a 480 × 120 plot, labels below.
const (
	chartBarW   = 20
	chartPlotH  = 120
	chartLabelH = 16
)

// timelineBars lays the timeline out as bars scaled to the busiest hour. The chart is drawn
// by the server as inline SVG — no script, no charting library — with a <title> per bar and
// the same numbers in a table beside it, for screen readers and for reading exact values.
func timelineBars(tl Timeline) []bar {
	out := make([]bar, 0, len(tl.Hours))
	for i, h := range tl.Hours {
		height := 0
		if tl.Max > 0 {
			height = int(h.Count * (chartPlotH - 4) / tl.Max)
		}
		if h.Count > 0 && height < 1 {
			height = 1
		}
		out = append(out, bar{X: i*chartBarW + 2, Y: chartPlotH - height, W: chartBarW - 4, H: height,
			Hour: h.From.UTC().Format(time.TimeOnly[:5]), Count: h.Count})
	}
	return out
}
