package localenv

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestFreePortOutsideEphemeralRange: hundreds of concurrent pickers get distinct ports, each
// bindable and outside the range the kernel gives outgoing connections, so no connection can
// take a port between its pick and its server's bind.
func TestFreePortOutsideEphemeralRange(t *testing.T) {
	elo, ehi, ok := ephemeralRange()
	if !ok {
		t.Skip("no ip_local_port_range")
	}
	if _, _, ok := reservableRange(); !ok {
		t.Skipf("ephemeral range %d-%d leaves no room to reserve ports", elo, ehi)
	}
	const pickers = 300
	ports := make([]int, pickers)
	errs := make([]error, pickers)
	var wg sync.WaitGroup
	for i := range pickers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ports[i], errs[i] = FreePort()
		}()
	}
	wg.Wait()
	seen := map[int]bool{}
	for i, p := range ports {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if p >= elo && p <= ehi {
			t.Errorf("port %d is in the ephemeral range %d-%d", p, elo, ehi)
		}
		if seen[p] {
			t.Errorf("port %d handed out twice", p)
		}
		seen[p] = true
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])))
	if err != nil {
		t.Fatalf("bind a picked port: %v", err)
	}
	l.Close()
}

// TestReservePortAcrossProcesses: several processes picking from one small range at once
// (400 picks of 500 ports, where unreserved random picks would collide at once) never get the
// same port. Every picker lives until all have reported: a reservation lasts as long as its
// process, and a picker that had ended would rightly leave its ports to the others.
func TestReservePortAcrossProcesses(t *testing.T) {
	lo, hi, ok := reservableRange()
	if !ok {
		t.Skip("ephemeral range leaves no room to reserve ports")
	}
	lo, hi = subRange(lo, hi, 1000, 500)
	dir := t.TempDir()
	const perProcess, processes = 100, 3
	type picker struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		ports []int
		err   error
	}
	pickers := make([]*picker, processes)
	var wg sync.WaitGroup
	for i := range pickers {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPortPickerProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "ACV_PORT_PICKER_DIR="+dir,
			"ACV_PORT_PICKER_RANGE="+strconv.Itoa(lo)+"-"+strconv.Itoa(hi),
			"ACV_PORT_PICKER_N="+strconv.Itoa(perProcess))
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := &picker{cmd: cmd, stdin: stdin}
		pickers[i] = p
		t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if sc.Text() == "picked" {
					return
				}
				if v, ok := strings.CutPrefix(sc.Text(), "port "); ok {
					port, err := strconv.Atoi(v)
					if err != nil {
						p.err = err
						return
					}
					p.ports = append(p.ports, port)
				}
			}
			p.err = fmt.Errorf("picker ended before it reported (%v)", sc.Err())
		}()
	}
	mine := make([]int, perProcess)
	mineErrs := make([]error, perProcess)
	for i := range perProcess {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine[i], mineErrs[i] = reservePort(dir, lo, hi)
		}()
	}
	wg.Wait() // every picker has reported and still holds its ports
	owner := map[int]string{}
	take := func(who string, p int) {
		if prev, dup := owner[p]; dup {
			t.Errorf("port %d handed to %s and to %s", p, prev, who)
		}
		owner[p] = who
	}
	for i, p := range mine {
		if mineErrs[i] != nil {
			t.Fatal(mineErrs[i])
		}
		take("the test", p)
	}
	for i, p := range pickers {
		if p.err != nil {
			t.Fatalf("picker process %d: %v", i, p.err)
		}
		if len(p.ports) != perProcess {
			t.Fatalf("picker process %d reported %d ports, want %d", i, len(p.ports), perProcess)
		}
		for _, port := range p.ports {
			take("process "+strconv.Itoa(i), port)
		}
	}
	for i, p := range pickers {
		p.stdin.Close()
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("picker process %d: %v", i, err)
		}
	}
}

// TestPortPickerProcess is the picker TestReservePortAcrossProcesses runs in other processes:
// it reserves its ports, reports them, and lives until its standard input closes.
func TestPortPickerProcess(t *testing.T) {
	dir := os.Getenv("ACV_PORT_PICKER_DIR")
	if dir == "" {
		t.Skip("run by TestReservePortAcrossProcesses")
	}
	los, his, _ := strings.Cut(os.Getenv("ACV_PORT_PICKER_RANGE"), "-")
	lo, _ := strconv.Atoi(los)
	hi, _ := strconv.Atoi(his)
	n, _ := strconv.Atoi(os.Getenv("ACV_PORT_PICKER_N"))
	ports := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := reservePort(dir, lo, hi)
			if err != nil {
				t.Error(err)
			}
			ports[i] = p
		}()
	}
	wg.Wait()
	var out strings.Builder
	for _, p := range ports {
		out.WriteString("port " + strconv.Itoa(p) + "\n")
	}
	out.WriteString("picked\n")
	os.Stdout.WriteString(out.String())
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// subRange is size ports of [lo, hi] starting off above lo, or as far up as hi allows.
func subRange(lo, hi, off, size int) (int, int) {
	start := min(lo+off, hi-size+1)
	return start, start + size - 1
}

// TestReservePortSkipsHeldAndBusy: of a range whose ports are reserved by a live process,
// listened on, or reserved by a process that is gone (or by an earlier process of the same
// id), only the stale reservations are taken, and then the range is exhausted.
func TestReservePortSkipsHeldAndBusy(t *testing.T) {
	lo, hi, ok := reservableRange()
	if !ok {
		t.Skip("ephemeral range leaves no room to reserve ports")
	}
	// Four consecutive bindable ports.
	base := 0
	from, to := subRange(lo, hi, 2000, 1000)
	for p := from; p+3 <= to; p += 4 {
		if bindable(p) && bindable(p+1) && bindable(p+2) && bindable(p+3) {
			base = p
			break
		}
	}
	if base == 0 {
		t.Skip("no four consecutive free ports")
	}
	dir := t.TempDir()
	write := func(port int, owner string) {
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(port)), []byte(owner+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	parent, err := processIdentity(os.Getppid())
	if err != nil {
		t.Fatal(err)
	}
	write(base, parent) // held by a live process

	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	write(base+1, strconv.Itoa(gone.Process.Pid)+" 1") // its process ended

	pidReused := strconv.Itoa(os.Getppid()) + " 1" // same id, another start time
	write(base+2, pidReused)

	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(base+3)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	got := map[int]bool{}
	for range 2 {
		p, err := reservePort(dir, base, base+3)
		if err != nil {
			t.Fatal(err)
		}
		got[p] = true
	}
	if !got[base+1] || !got[base+2] {
		t.Fatalf("took %v of %d-%d, want the two stale reservations %d and %d", got, base, base+3, base+1, base+2)
	}
	if p, err := reservePort(dir, base, base+3); err == nil {
		t.Fatalf("took port %d of a range all reserved or in use", p)
	}
	me, _ := processIdentity(os.Getpid())
	for p := range got {
		b, _ := os.ReadFile(filepath.Join(dir, strconv.Itoa(p)))
		if strings.TrimSpace(string(b)) != me {
			t.Errorf("reservation of %d holds %q, want %q", p, b, me)
		}
	}
}
