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
