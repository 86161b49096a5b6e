package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// -o means one thing in every command: --output, an output format. A file to write is an
// argument (acv codes export FILE), as a file to read is (acv codes import FILE).
func TestOutputFlagIsAlwaysAFormat(t *testing.T) {
	var walk func(c *cobra.Command)
	seen := 0
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Shorthand != "o" && f.Name != "output" {
				return
			}
			seen++
			if f.Shorthand != "o" || f.Name != "output" || !strings.Contains(f.Usage, "format") {
				t.Errorf("%s: -%s --%s (%q): want -o, --output, an output format", c.CommandPath(), f.Shorthand, f.Name, f.Usage)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(rootCmd())
	if seen == 0 {
		t.Fatal("no command has -o")
	}
}

// A time flag takes Unix seconds in their one decimal form, or RFC 3339; "+5" and "007" are
// refused rather than read as another spelling of 5 and 7.
func TestParseTimeTakesOneFormOfSeconds(t *testing.T) {
	for in, want := range map[string]int64{"5": 5, "0": 0, "-1": -1, "2026-11-29T00:00:00Z": 1795910400} {
		if got, err := parseTime(in); err != nil || got == nil || *got != want {
			t.Errorf("parseTime(%q) = %v, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"+5", "007", "5.0", " 5", "5s"} {
		if got, err := parseTime(in); err == nil {
			t.Errorf("parseTime(%q) = %d, want an error", in, *got)
		}
	}
}
