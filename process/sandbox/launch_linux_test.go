package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary is its own launcher and its own confined program,
// chosen by testRole: "launcher" runs Launch on the arguments after "--"
// (with testABI, if set, as the kernel's Landlock ABI: the only way to
// test an old kernel on a new one), and "program" runs one probe
// (probe).
const (
	testRole = "SANDBOX_TEST_ROLE"
	testABI  = "SANDBOX_TEST_ABI"
)

func TestMain(m *testing.M) {
	switch os.Getenv(testRole) {
	case "launcher":
		if v := os.Getenv(testABI); v != "" {
			abi, _ := strconv.Atoi(v)
			detectABI = func() int { return abi }
		}
		os.Setenv(testRole, "program")
		args := os.Args[1:]
		if len(args) > 0 && args[0] == "--" {
			args = args[1:]
		}
		os.Exit(Launch(args, os.Stderr))
	case "program":
		os.Exit(probe(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// probe does what args say inside the sandbox and prints the outcome:
// exit 0 when it worked, 1 when it failed (the error printed).
func probe(args []string) int {
	var err error
	switch args[0] {
	case "read":
		var b []byte
		if b, err = os.ReadFile(args[1]); err == nil {
			fmt.Printf("read %q\n", b)
		}
	case "write":
		err = os.WriteFile(args[1], []byte("written"), 0o600)
	case "connect":
		var c net.Conn
		if c, err = net.DialTimeout("tcp", args[1], 5*time.Second); err == nil {
			c.Close()
		}
	case "listen": // plain TCP, or Multipath TCP (Go's default for Listen)
		var lc net.ListenConfig
		lc.SetMultipathTCP(args[1] == "mptcp")
		var ln net.Listener
		if ln, err = lc.Listen(context.Background(), "tcp", "127.0.0.1:0"); err == nil {
			ln.Close()
		}
	case "socket": // socket(FAMILY, TYPE, PROTOCOL), numbers
		var v [3]int
		for i := range v {
			v[i], _ = strconv.Atoi(args[1+i])
		}
		var fd int
		if fd, err = unix.Socket(v[0], v[1], v[2]); err == nil {
			unix.Close(fd)
			fmt.Println("socket made")
		}
	case "alloc":
		n, _ := strconv.ParseInt(args[1], 10, 64)
		b := make([]byte, n)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		fmt.Printf("allocated %d bytes\n", len(b))
	case "spin":
		for {
		}
	case "env":
		_, set := os.LookupEnv(EnvSpec)
		fmt.Printf("%s set: %v\n", EnvSpec, set)
	case "signal": // signal the process given (the test's own) with 0
		pid, _ := strconv.Atoi(args[1])
		err = syscall.Kill(pid, 0)
	}
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	return 0
}

// launched is one run of the launcher: its combined output and exit.
type launched struct {
	out  string
	code int // exit status, -1 when killed by a signal
	sig  syscall.Signal
}

// launch runs the test binary as the launcher with spec (abi > 0
// simulates that Landlock ABI), which runs the test binary as the
// program with args. Bounded by 60 s.
func launch(t *testing.T, spec Spec, abi int, args ...string) launched {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	value, err := spec.Encode()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, append([]string{"--", exe}, args...)...)
	cmd.Env = append(os.Environ(), testRole+"=launcher", EnvSpec+"="+value)
	if abi > 0 {
		cmd.Env = append(cmd.Env, testABI+"="+strconv.Itoa(abi))
	}
	out, err := cmd.CombinedOutput()
	var l launched
	l.out = string(out)
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		l.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			l.sig = ws.Signal()
		}
	case err != nil:
		t.Fatalf("launch %v: %v\n%s", args, err, out)
	}
	if ctx.Err() != nil {
		t.Fatalf("launch %v: not done in 60 s\n%s", args, out)
	}
	return l
}

// needLandlock logs the kernel's Landlock ABI and skips the test when
// the kernel has none.
func needLandlock(t *testing.T, min int) int {
	t.Helper()
	abi := detectABI()
	t.Logf("Landlock ABI %d", abi)
	if abi < min {
		t.Skipf("this kernel's Landlock ABI is %d; the test needs %d", abi, min)
	}
	return abi
}

func (l launched) want(t *testing.T, code int, contains string) {
	t.Helper()
	if l.code != code || !strings.Contains(l.out, contains) {
		t.Errorf("exit %d (signal %v), output:\n%s\nwant exit %d and %q", l.code, l.sig, l.out, code, contains)
	}
}

func TestConfineFilesystem(t *testing.T) {
	needLandlock(t, 1)
	if _, err := os.ReadFile("/etc/hostname"); err != nil {
		t.Skipf("no readable /etc/hostname to be denied: %v", err)
	}
	allowed, writable, other := t.TempDir(), t.TempDir(), t.TempDir()
	ok := filepath.Join(allowed, "ok.txt")
	if err := os.WriteFile(ok, []byte("inside"), 0o600); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(other, "secret.txt")
	if err := os.WriteFile(secret, []byte("outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := Spec{Confine: true, Read: []string{allowed}, Write: []string{writable}}

	// Unconfined, the program reads all of it: the denials below are the
	// sandbox's.
	launch(t, Spec{}, 0, "read", "/etc/hostname").want(t, 0, "read ")
	launch(t, Spec{}, 0, "read", secret).want(t, 0, `read "outside"`)

	l := launch(t, spec, 0, "read", "/etc/hostname")
	l.want(t, 1, "permission denied")
	t.Logf("launcher's line: %s", firstLine(l.out))
	launch(t, spec, 0, "read", secret).want(t, 1, "permission denied")
	launch(t, spec, 0, "read", ok).want(t, 0, `read "inside"`)
	launch(t, spec, 0, "write", filepath.Join(writable, "new.txt")).want(t, 0, "")
	launch(t, spec, 0, "write", filepath.Join(allowed, "new.txt")).want(t, 1, "permission denied")
	launch(t, spec, 0, "write", filepath.Join(other, "new.txt")).want(t, 1, "permission denied")
	if b, err := os.ReadFile(filepath.Join(writable, "new.txt")); err != nil || string(b) != "written" {
		t.Errorf("written file = %q, %v", b, err)
	}
	// The launcher's variable does not reach the program.
	launch(t, spec, 0, "env").want(t, 0, EnvSpec+" set: false")
}

func TestConfinedProgramCannotSignalTheHost(t *testing.T) {
	needLandlock(t, abiScoped)
	self := strconv.Itoa(os.Getpid())
	launch(t, Spec{}, 0, "signal", self).want(t, 0, "")
	launch(t, Spec{Confine: true}, 0, "signal", self).want(t, 1, "operation not permitted")
}

func TestDenyNetwork(t *testing.T) {
	needLandlock(t, abiNetwork)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)

	launch(t, Spec{}, 0, "connect", addr).want(t, 0, "")
	l := launch(t, Spec{DenyNetwork: true}, 0, "connect", addr)
	l.want(t, 1, "permission denied")
	t.Logf("launcher's line: %s", firstLine(l.out))
	launch(t, Spec{DenyNetwork: true, ConnectTCP: []uint16{port}}, 0, "connect", addr).want(t, 0, "")
	launch(t, Spec{DenyNetwork: true, ConnectTCP: []uint16{port}}, 0, "listen", "tcp").want(t, 1, "permission denied")
	// Landlock does not cover Multipath TCP; the seccomp filter does.
	launch(t, Spec{DenyNetwork: true}, 0, "listen", "mptcp").want(t, 1, "permission denied")
	launch(t, Spec{DenyNetwork: true, ConnectTCP: []uint16{port}}, 0, "listen", "mptcp").want(t, 1, "permission denied")
}

// TestDenyNetworkEveryFamily: under DenyNetwork every socket but AF_UNIX
// is refused by the seccomp filter, whatever Landlock's ABI: TCP, MPTCP,
// UDP, raw, netlink, packet, SCTP, over IPv4 and IPv6; with ConnectTCP
// ports, plain TCP stream sockets are made (Landlock then holds the
// ports) and nothing else. Without DenyNetwork each is made (so the test
// can fail), but raw and packet sockets, which need privilege.
func TestDenyNetworkEveryFamily(t *testing.T) {
	const (
		mptcp = 262
		sctp  = unix.IPPROTO_SCTP
	)
	stream := unix.SOCK_STREAM | unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK
	cases := []struct {
		name           string
		fam, typ, prot int
		allowedByPorts bool
		privileged     bool
	}{
		{"tcp4", unix.AF_INET, unix.SOCK_STREAM, 0, true, false},
		{"tcp4 nonblock cloexec", unix.AF_INET, stream, unix.IPPROTO_TCP, true, false},
		{"tcp6", unix.AF_INET6, unix.SOCK_STREAM, 0, true, false},
		{"mptcp4", unix.AF_INET, unix.SOCK_STREAM, mptcp, false, false},
		{"mptcp6", unix.AF_INET6, unix.SOCK_STREAM, mptcp, false, false},
		{"udp4", unix.AF_INET, unix.SOCK_DGRAM, 0, false, false},
		{"udp6", unix.AF_INET6, unix.SOCK_DGRAM, 0, false, false},
		{"icmp4 ping", unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP, false, true},
		{"raw4", unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW, false, true},
		{"sctp4", unix.AF_INET, unix.SOCK_SEQPACKET, sctp, false, true},
		{"netlink route", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE, false, false},
		{"packet", unix.AF_PACKET, unix.SOCK_RAW, 0, false, true},
	}
	for _, c := range cases {
		args := []string{"socket", strconv.Itoa(c.fam), strconv.Itoa(c.typ), strconv.Itoa(c.prot)}
		t.Run(c.name, func(t *testing.T) {
			if free := launch(t, Spec{}, 0, args...); free.code != 0 && !c.privileged {
				t.Fatalf("without DenyNetwork the socket is not made either: %s", free.out)
			}
			launch(t, Spec{DenyNetwork: true}, 0, args...).want(t, 1, "permission denied")
			withPorts := launch(t, Spec{DenyNetwork: true, ConnectTCP: []uint16{443}}, 0, args...)
			if c.allowedByPorts {
				withPorts.want(t, 0, "socket made")
			} else {
				withPorts.want(t, 1, "permission denied")
			}
		})
	}
	launch(t, Spec{DenyNetwork: true}, 0, "socket", strconv.Itoa(unix.AF_UNIX), strconv.Itoa(unix.SOCK_STREAM), "0").want(t, 0, "socket made")
}

// TestLimits: an allocation above MemoryBytes fails (Go: "fatal error:
// runtime: out of memory: cannot allocate", exit 2) while a smaller one succeeds, and a
// program spinning past CPUSeconds is killed.
func TestLimits(t *testing.T) {
	// A Go program reserves about 1 GiB of address space before main
	// (more with cgo threads), so the cap must leave room for that.
	const limit = 3 << 30
	l := launch(t, Spec{MemoryBytes: limit}, 0, "alloc", strconv.Itoa(256<<20))
	l.want(t, 0, "allocated 268435456 bytes")
	t.Logf("launcher's line: %s", firstLine(l.out))
	l = launch(t, Spec{MemoryBytes: limit}, 0, "alloc", strconv.Itoa(4<<30))
	// The runtime's words differ under -race ("too many address space
	// collisions for -race mode"); either way a fatal error, exit 2.
	if l.code != 2 || !strings.Contains(l.out, "fatal error: ") || strings.Contains(l.out, "allocated") {
		t.Errorf("allocating 4 GiB under a 3 GiB cap: exit %d\n%s\nwant exit 2 and a fatal error", l.code, l.out)
	}
	t.Logf("over the cap: %s", firstLine(strings.SplitN(l.out, "\n", 2)[1]))
	l = launch(t, Spec{CPUSeconds: 1}, 0, "spin")
	if l.sig != syscall.SIGXCPU && l.sig != syscall.SIGKILL {
		t.Errorf("spinning under a 1 s CPU limit: exit %d, signal %v, want SIGXCPU or SIGKILL\n%s", l.code, l.sig, l.out)
	}
	t.Logf("spin under RLIMIT_CPU 1 s ended by %v", l.sig)
}

func TestRequire(t *testing.T) {
	real := needLandlock(t, 1)
	// A kernel too old for the network rules (ABI 3) is simulated: the
	// launcher believes the ABI it is given (test hook detectABI).
	l := launch(t, Spec{DenyNetwork: true, Require: true}, 3, "env")
	l.want(t, ExitNotApplied, "[ERROR] sandbox: ")
	if !strings.Contains(l.out, "network denial needs ABI 4") || strings.Contains(l.out, EnvSpec+" set") {
		t.Errorf("require on ABI 3 ran the program or did not name the network:\n%s", l.out)
	}
	launch(t, Spec{Confine: true, Require: true}, 2, "env").want(t, ExitNotApplied, "filesystem sandbox needs ABI 3")
	// Best effort on the same kernel runs the program with what applies,
	// and says what did not.
	// Without ports the seccomp filter denies the network whole; with
	// ports the port rule is what the old kernel lacks.
	l = launch(t, Spec{DenyNetwork: true, Confine: true}, 3, "env")
	l.want(t, 0, "[WARN] sandbox: Landlock ABI 3")
	if !strings.Contains(l.out, "network denied: no socket but AF_UNIX (seccomp)") {
		t.Errorf("best effort line does not say the network is denied:\n%s", l.out)
	}
	l = launch(t, Spec{DenyNetwork: true, ConnectTCP: []uint16{443}}, 3, "env")
	if !strings.Contains(l.out, "TCP connect only to [443] (TCP sockets connect anywhere): needs Landlock ABI 4") {
		t.Errorf("best effort line does not name the port rule:\n%s", l.out)
	}
	// On this kernel, with what it has, Require runs the program.
	if real >= abiNetwork {
		launch(t, Spec{DenyNetwork: true, Confine: true, Require: true}, 0, "env").want(t, 0, "[DEBUG] sandbox: Landlock ABI")
	}
}

func TestLaunchUsage(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		env  []string
		args []string
		code int
		want string
	}{
		{nil, []string{"--", exe, "env"}, ExitUsage, EnvSpec + " is not set"},
		{[]string{EnvSpec + `={"confine":true,"bogus":1}`}, []string{"--", exe, "env"}, ExitUsage, `unknown field "bogus"`},
		{[]string{EnvSpec + `={"read":["rel"]}`}, []string{"--", exe, "env"}, ExitUsage, "not a clean absolute path"},
		{[]string{EnvSpec + `={"confine":true}`}, []string{"--"}, ExitUsage, "no program"},
		{[]string{EnvSpec + `={"confine":true}`}, []string{"--", "/nonexistent/program"}, ExitExec, "no such file"},
	} {
		cmd := exec.Command(exe, c.args...)
		cmd.Env = append(append(os.Environ(), testRole+"=launcher"), c.env...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != c.code || !strings.Contains(string(out), c.want) {
			t.Errorf("%v %v: %v\n%s\nwant exit %d and %q", c.env, c.args, err, out, c.code, c.want)
		}
	}
}

// TestConfinedInterpreters runs a shell script, python3 and node under
// Confine with nothing beyond the defaults: DefaultRead must be enough
// for them to start, import their standard modules and read the time.
func TestConfinedInterpreters(t *testing.T) {
	needLandlock(t, 1)
	for _, c := range []struct {
		program string
		args    []string
	}{
		{"/bin/sh", []string{"-c", "date >/dev/null && echo ok"}},
		{"/usr/bin/python3", []string{"-c", "import json, socket, ssl, hashlib, datetime, tempfile; datetime.datetime.now().astimezone(); print('ok')"}},
		{"/usr/bin/node", []string{"-e", "require('crypto'); require('http'); new Date().toString(); console.log('ok')"}},
	} {
		if _, err := os.Stat(c.program); err != nil {
			t.Logf("%s not tested: %v", c.program, err)
			continue
		}
		value, _ := Spec{Confine: true}.Encode()
		exe, _ := os.Executable()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, exe, append([]string{"--", c.program}, c.args...)...)
		cmd.Env = append(os.Environ(), testRole+"=launcher", EnvSpec+"="+value)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "ok") {
			t.Errorf("%s confined: %v\n%s", c.program, err, out)
		}
	}
}

func firstLine(s string) string { line, _, _ := strings.Cut(s, "\n"); return line }
