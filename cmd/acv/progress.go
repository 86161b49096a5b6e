package main

import (
	"fmt"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress reports how many codes an operation has done: on a terminal as a bar with the count
// and the rate, otherwise (a log, a pipe, CI) as a plain line at most every plainEvery and at
// the end, so the output stays readable.
type progress struct {
	what                 string
	bar                  *progressbar.ProgressBar
	start, last          time.Time
	total, done, printed int64
}

var plainEvery = 2 * time.Second

func newProgress(what string, total int64) *progress {
	p := &progress{what: what, total: total, start: time.Now()}
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
	} else if time.Since(p.last) >= plainEvery {
		p.line()
	}
}

// Finish ends the bar, or prints the last plain line.
func (p *progress) Finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	} else if p.done != p.printed {
		p.line()
	}
}

func (p *progress) line() {
	p.last, p.printed = time.Now(), p.done
	el := p.last.Sub(p.start)
	pct := 100.0
	if p.total > 0 {
		pct = 100 * float64(p.done) / float64(p.total)
	}
	fmt.Fprintf(os.Stderr, "%s: %d of %d codes (%.0f%%), %.0f codes/s, %s elapsed\n",
		p.what, p.done, p.total, pct, float64(p.done)/max(el.Seconds(), 1e-9), el.Round(time.Second))
}
