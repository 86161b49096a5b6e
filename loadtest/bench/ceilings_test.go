package main

import "testing"

// redis-benchmark prints the command unescaped as the first CSV field; acv's script arguments
// hold raw bytes, quotes and line breaks among them. The rate is read all the same.
func TestBenchmarkRPSReadsPastARawCommand(t *testing.T) {
	header := `"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"` + "\n"
	for _, command := range []string{
		`EVALSHA a6 4 k`,
		"EVALSHA a6 4 acv:{OQ}:c:\x01\xa2\"\x15 \x0a127.0.0.1\x01",
		"EVALSHA \"\"\n\n\",\",\"",
	} {
		out := header + `"` + command + `","40155.27","1.460","0.248","1.303","2.583","3.519","15.183"` + "\n"
		rps, err := benchmarkRPS([]byte(out))
		if err != nil || rps != 40155.27 {
			t.Errorf("command %q: rps %v, %v; want 40155.27", command, rps, err)
		}
	}
	// redis-benchmark before 7.0: the command and the rate alone.
	if rps, err := benchmarkRPS([]byte("\"EVALSHA a\x22b\",\"812.5\"\n")); err != nil || rps != 812.5 {
		t.Errorf("two-column output: rps %v, %v; want 812.5", rps, err)
	}
	for _, out := range []string{"", header, `"x","1.0`, "ERR unknown command\n"} {
		if rps, err := benchmarkRPS([]byte(out)); err == nil {
			t.Errorf("output %q read as %v", out, rps)
		}
	}
}
