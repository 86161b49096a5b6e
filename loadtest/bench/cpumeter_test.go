package main

import (
	"context"
	"testing"

	"github.com/acv/acv/internal/localenv"
)

// The CPU meter measures what Verify and the relay send: a run of a few thousand verifies
// reports the script's FCALL and the replay marker's SET in the verify phase, the relay's
// reads in the other, and a CPU time of redis-server's own for both.
func TestMeasureVerifyCPUSeesTheHotPathsCommands(t *testing.T) {
	v, err := MeasureVerifyCPU(context.Background(), t.TempDir(), localenv.RedisOptions{AOF: true}, CPURun{Codes: 3000, Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(v)
	calls := map[string]int64{}
	for _, c := range v.Commands {
		calls[c.Phase+" "+c.Name] += c.Calls
	}
	if calls["verify fcall"] != 3000 || calls["verify set"] != 3000 || calls["relay lrange"] == 0 {
		t.Errorf("commands %v: want 3,000 FCALLs, a SET each and the relay's LRANGEs", calls)
	}
	var fcall, set float64
	for _, c := range v.Commands {
		switch {
		case c.Phase == "verify" && c.Name == "fcall":
			fcall = float64(c.Usec) / float64(v.Verifies)
		case c.Phase == "verify" && c.Name == "set":
			set = float64(c.Usec) / float64(v.Verifies)
		}
	}
	if d := v.Script - fcall - set; d < -0.01 || d > 0.01 {
		t.Errorf("script figure %.2f µs, want FCALL %.2f + the marker's SET %.2f", v.Script, fcall, set)
	}
	if v.Script <= 0 || v.Relay <= 0 || v.Process <= 0 || v.Batches == 0 {
		t.Errorf("figures %+v: want each above zero", v)
	}
}

// Run as a deployment runs it (the relay beside the verifies, other codes stored, a paced
// rate), the meter still counts one FCALL and one SET per verify as the verify's, and the
// relay's reads as the relay's.
func TestMeasureVerifyCPUWithTheRelayRunning(t *testing.T) {
	v, err := MeasureVerifyCPU(context.Background(), t.TempDir(), localenv.RedisOptions{AOF: true}, CPURun{Codes: 2000, Concurrency: 8, Rate: 4000, Stored: 3000, RelayDuring: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(v)
	calls := map[string]int64{}
	for _, c := range v.Commands {
		calls[c.Phase+" "+c.Name] += c.Calls
	}
	if calls["verify fcall"] != 2000 || calls["verify lrange"] == 0 {
		t.Errorf("commands %v: want 2,000 FCALLs and the relay's LRANGEs beside them", calls)
	}
	if d := v.Script - (v.FCALL()+v.usecPerCall("set"))*float64(calls["verify fcall"])/float64(v.Verifies); d > 0.5 {
		t.Errorf("script figure %.2f µs holds more than the FCALL and the marker's SET", v.Script)
	}
	if v.Relay <= 0 || v.Batches == 0 {
		t.Errorf("figures %+v: want the relay's share above zero", v)
	}
}
