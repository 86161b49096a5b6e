package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress reports how many codes an operation has done: on a terminal as a bar with the count
// and the rate, otherwise (a log, a pipe, CI) as a plain line at most every few seconds and at
// the end, so the output stays readable.
type progress struct {
	what  string
	total int64
	w     io.Writer
	bar   *progressbar.ProgressBar

	start   time.Time
	last    time.Time
	done    int64
	printed int64
}

// plainEvery is how often a non-terminal progress line is printed at most.
var plainEvery = 2 * time.Second

func newProgress(what string, total int64) *progress {
	p := &progress{what: what, total: total, w: os.Stderr, start: time.Now()}
	p.last = p.start
	if term.IsTerminal(int(os.Stderr.Fd())) {
		p.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(os.Stderr),
			progressbar.OptionSetDescription(what),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("codes"),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionFullWidth(),
			progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(os.Stderr) }),
		)
	}
	return p
}

// Set records that done codes are done.
func (p *progress) Set(done int) {
	p.done = int64(done)
	if p.bar != nil {
		_ = p.bar.Set64(p.done)
		return
	}
	if now := time.Now(); now.Sub(p.last) >= plainEvery {
		p.last = now
		p.line(now)
	}
}

// Finish ends the bar, or prints the last plain line.
func (p *progress) Finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		return
	}
	if p.done != p.printed {
		p.line(time.Now())
	}
}

func (p *progress) line(now time.Time) {
	p.printed = p.done
	el := now.Sub(p.start)
	rate := 0.0
	if s := el.Seconds(); s > 0 {
		rate = float64(p.done) / s
	}
	pct := 100.0
	if p.total > 0 {
		pct = 100 * float64(p.done) / float64(p.total)
	}
	fmt.Fprintf(p.w, "%s: %d of %d codes (%.0f%%), %.0f codes/s, %s elapsed\n", p.what, p.done, p.total, pct, rate, el.Round(time.Second))
}
