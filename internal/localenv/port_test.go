package localenv

import (
	"bufio"
	"bytes"
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
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skip("no ip_local_port_range:", err)
	}
	f := strings.Fields(string(b))
	elo, _ := strconv.Atoi(f[0])
	ehi, _ := strconv.Atoi(f[1])
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
// same port.
func TestReservePortAcrossProcesses(t *testing.T) {
	if os.Getenv("ACV_PORT_PICKER_DIR") != "" {
		return // the helper is TestPortPickerProcess
	}
	lo, _, ok := reservableRange()
	if !ok {
		t.Skip("ephemeral range leaves no room to reserve ports")
	}
	dir := t.TempDir()
	lo, hi := lo+1000, lo+1499
	const perProcess, processes = 100, 3
	var wg sync.WaitGroup
	outs := make([][]byte, processes)
	errs := make([]error, processes)
	for i := range processes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestPortPickerProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), "ACV_PORT_PICKER_DIR="+dir,
				"ACV_PORT_PICKER_RANGE="+strconv.Itoa(lo)+"-"+strconv.Itoa(hi),
				"ACV_PORT_PICKER_N="+strconv.Itoa(perProcess))
			outs[i], errs[i] = cmd.CombinedOutput()
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
	wg.Wait()
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
	for i, out := range outs {
		if errs[i] != nil {
			t.Fatalf("picker process %d: %v\n%s", i, errs[i], out)
		}
		n := 0
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			if s, ok := strings.CutPrefix(sc.Text(), "port "); ok {
				p, err := strconv.Atoi(s)
				if err != nil {
					t.Fatal(err)
				}
				take("process "+strconv.Itoa(i), p)
				n++
			}
		}
		if n != perProcess {
			t.Fatalf("picker process %d reported %d ports, want %d:\n%s", i, n, perProcess, out)
		}
	}
}

// TestPortPickerProcess is the picker TestReservePortAcrossProcesses runs in other processes.
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
	os.Stdout.WriteString(out.String())
}

// TestReservePortSkipsHeldAndBusy: of a range whose ports are reserved by a live process,
// listened on, or reserved by a process that is gone (or by an earlier process of the same
// id), only the stale reservations are taken, and then the range is exhausted.
func TestReservePortSkipsHeldAndBusy(t *testing.T) {
	lo, _, ok := reservableRange()
	if !ok {
		t.Skip("ephemeral range leaves no room to reserve ports")
	}
	// Four consecutive bindable ports.
	base := 0
	for p := lo + 2000; p+3 < lo+3000; p += 4 {
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
