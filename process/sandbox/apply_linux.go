package sandbox

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Landlock ABI versions that add what a Spec relies on.
const (
	abiTruncate = 3 // truncate(2) and ftruncate of opened files
	abiNetwork  = 4 // TCP bind and connect
	abiIoctlDev = 5 // ioctl on device files
	abiScoped   = 6 // signals and abstract unix sockets of other domains
)

// abiConfigs are go-landlock's configurations by ABI version: everything
// that ABI can restrict.
var abiConfigs = []landlock.Config{{}, landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}

// detectABI returns the kernel's Landlock ABI version, 0 when Landlock is
// not available. Tests replace it to simulate an older kernel.
var detectABI = func() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// Result is what Apply did.
type Result struct {
	// ABI is the kernel's Landlock ABI version, 0 when the kernel has no
	// Landlock (or it is disabled at boot).
	ABI int
	// Missing names what the Spec asked for that this kernel cannot
	// enforce, each with the ABI version it needs ("network (TCP bind and
	// connect): needs Landlock ABI 4"). Unless Spec.Require is set these
	// were skipped (best effort).
	Missing []string
	// Absent are Spec.Read and Spec.Write paths that do not exist; they
	// got no rule (and stay unreachable to the plugin if created later).
	Absent []string
	// RootNProc is set when Spec.Processes was applied to a process of
	// root or with CAP_SYS_RESOURCE/CAP_SYS_ADMIN, which RLIMIT_NPROC does
	// not bind.
	RootNProc bool
}

// ErrNotApplied wraps every error of Apply: the Spec could not be
// applied as asked (Spec.Require and a kernel without a needed Landlock
// feature, or a failed setrlimit or Landlock call).
var ErrNotApplied = errors.New("sandbox not applied")

// Apply applies s to the calling process, which is about to execute
// program (an absolute path): first one Landlock ruleset that handles
//
//   - with Confine, every filesystem right of the kernel's ABI: read and
//     execute under DefaultRead, Read and program; read and write of
//     DefaultDevices; read, write, create and remove under Write and
//     sockDir (go-plugin's PLUGIN_UNIX_SOCKET_DIR, where the plugin
//     creates its unix socket; "" for none); plus scoping of signals and
//     abstract unix sockets (ABI 6), so the plugin cannot signal the host
//     or other processes outside its sandbox;
//   - with DenyNetwork, TCP bind and TCP connect, except connecting to
//     the ports of ConnectTCP (ABI 4);
//
// then, with DenyNetwork, a seccomp filter that refuses every socket but
// AF_UNIX (and TCP ones when ConnectTCP allows ports): UDP, raw, MPTCP,
// SCTP, packet and netlink sockets (netfilter_linux.go); then the
// rlimits: RLIMIT_AS from MemoryBytes, RLIMIT_CPU from
// CPUSeconds (the hard limit one second later: SIGXCPU, then SIGKILL),
// RLIMIT_NPROC from Processes; a limit is never raised above the current
// hard limit. The limits come last because they bind the caller too: a
// Go process under an address-space cap below its own size cannot create
// a thread or grow its heap (the launcher died setting up Landlock under
// a 1 GiB cap before this order), so the caller should execute program
// right after Apply.
//
// The ruleset holds for program and every process it starts, and cannot
// be lifted (no_new_privs is set too: set-user-ID programs do not gain
// privileges). Without Require it is best effort: what the kernel cannot
// enforce is listed in Result.Missing and skipped. With Require a Confine
// on a kernel below ABI 3 (truncate) or a DenyNetwork below ABI 4 fails
// before anything is restricted. Errors wrap ErrNotApplied.
func Apply(s Spec, program, sockDir string) (Result, error) {
	p, err := newPlan(s, program, sockDir)
	if err != nil {
		return p.res, err
	}
	if err := p.restrict(); err != nil {
		return p.res, err
	}
	return p.res, p.limit()
}

// plan is what Apply will do, computed before anything is applied.
type plan struct {
	spec  Spec
	res   Result
	rules []landlock.Rule
}

// newPlan checks s against the kernel (Require) and builds the Landlock
// rules (paths are looked up now). Errors wrap ErrNotApplied.
func newPlan(s Spec, program, sockDir string) (*plan, error) {
	p := &plan{spec: s, res: Result{ABI: detectABI()}}
	if err := s.Check(); err != nil {
		return p, fmt.Errorf("%w: %v", ErrNotApplied, err)
	}
	p.res.Missing = missing(s, p.res.ABI)
	if need := required(s, p.res.ABI); s.Require && len(need) > 0 {
		return p, fmt.Errorf("%w: --require-sandbox: Landlock ABI %d: %s", ErrNotApplied, p.res.ABI, strings.Join(need, "; "))
	}
	if s.Confine && p.res.ABI > 0 {
		var err error
		if p.rules, p.res.Absent, err = fsRules(s, program, sockDir, p.res.ABI); err != nil {
			return p, fmt.Errorf("%w: %v", ErrNotApplied, err)
		}
	}
	if s.DenyNetwork && p.res.ABI >= abiNetwork {
		for _, port := range s.ConnectTCP {
			p.rules = append(p.rules, landlock.ConnectTCP(port))
		}
	}
	p.res.RootNProc = s.Processes > 0 && os.Getuid() == 0
	return p, nil
}

// restrict enforces the Landlock ruleset, if any, then with DenyNetwork
// the seccomp socket filter (netfilter_linux.go), which holds on every
// kernel with seccomp whatever its Landlock ABI.
func (p *plan) restrict() error {
	if err := p.landlock(); err != nil {
		return err
	}
	if p.spec.DenyNetwork {
		return denyNetwork(p.spec)
	}
	return nil
}

// landlock enforces the Landlock ruleset, if any.
func (p *plan) landlock() error {
	if p.res.ABI == 0 || !(p.spec.Confine || p.spec.DenyNetwork) {
		return nil
	}
	cfg := landlockConfig(p.spec, p.res.ABI)
	if !p.spec.Require {
		cfg = cfg.BestEffort()
	}
	if err := cfg.Restrict(p.rules...); err != nil {
		return fmt.Errorf("%w: landlock: %v", ErrNotApplied, err)
	}
	return nil
}

// limit sets the rlimits.
func (p *plan) limit() error {
	if err := setLimits(p.spec); err != nil {
		return fmt.Errorf("%w: %v", ErrNotApplied, err)
	}
	return nil
}

// landlockConfig is what one ruleset handles for s on a kernel of ABI
// abi: every filesystem right and IPC scope of the ABI when s confines,
// TCP bind and connect when it denies the network.
func landlockConfig(s Spec, abi int) landlock.Config {
	base := abiConfigs[min(abi, len(abiConfigs)-1)]
	var cfg landlock.Config
	if s.Confine {
		cfg.HandledAccessFS, cfg.Scoped = base.HandledAccessFS, base.Scoped
	}
	if s.DenyNetwork {
		cfg.HandledAccessNet = base.HandledAccessNet & (ll.AccessNetBindTCP | ll.AccessNetConnectTCP)
	}
	return cfg
}

// missing names what s asks for that a kernel of ABI abi cannot enforce.
func missing(s Spec, abi int) []string {
	var out []string
	if s.Confine {
		switch {
		case abi == 0:
			out = append(out, "filesystem sandbox: the kernel has no Landlock")
		case abi < abiTruncate:
			out = append(out, fmt.Sprintf("truncate(2) of any file: needs Landlock ABI %d", abiTruncate))
		}
		if abi > 0 && abi < abiIoctlDev {
			out = append(out, fmt.Sprintf("ioctl on devices: needs Landlock ABI %d", abiIoctlDev))
		}
		if abi > 0 && abi < abiScoped {
			out = append(out, fmt.Sprintf("signals and abstract unix sockets to processes outside the sandbox: needs Landlock ABI %d", abiScoped))
		}
	}
	if s.DenyNetwork && abi < abiNetwork && len(s.ConnectTCP) > 0 {
		// Without ports the seccomp filter refuses every TCP socket;
		// with ports it lets TCP sockets be made, and only Landlock keeps
		// them to those ports.
		out = append(out, fmt.Sprintf("TCP connect only to %v (TCP sockets connect anywhere): needs Landlock ABI %d", s.ConnectTCP, abiNetwork))
	}
	return out
}

// required names what Spec.Require makes a start failure: a filesystem
// sandbox below ABI 3 (truncate(2) would escape it) and a network denial
// below ABI 4. Device ioctl and IPC scoping are applied when the kernel
// has them and only reported otherwise.
func required(s Spec, abi int) []string {
	var out []string
	if s.Confine && abi < abiTruncate {
		out = append(out, fmt.Sprintf("filesystem sandbox needs ABI %d (truncate)", abiTruncate))
	}
	if s.DenyNetwork && abi < abiNetwork {
		out = append(out, fmt.Sprintf("network denial needs ABI %d (TCP bind and connect)", abiNetwork))
	}
	return out
}

// fsRules returns the filesystem rules of s: directories get directory
// rights, files file rights (Landlock refuses directory rights on a
// file). Missing defaults are skipped silently, missing Read and Write
// paths are returned as absent.
func fsRules(s Spec, program, sockDir string, abi int) (rules []landlock.Rule, absent []string, err error) {
	const deviceRW = ll.AccessFSReadFile | ll.AccessFSWriteFile
	add := func(path string, write, optional bool) error {
		fi, err := os.Stat(path)
		switch {
		case errors.Is(err, os.ErrNotExist) && optional:
			return nil
		case errors.Is(err, os.ErrNotExist):
			absent = append(absent, path)
			return nil
		case err != nil:
			return err
		}
		var r landlock.FSRule
		switch {
		case fi.IsDir() && write:
			r = landlock.RWDirs(path)
			if abi >= 2 {
				r = r.WithRefer() // rename and link within the writable folders
			}
		case fi.IsDir():
			r = landlock.RODirs(path)
		case write:
			r = landlock.RWFiles(path)
		default:
			r = landlock.ROFiles(path)
		}
		rules = append(rules, r)
		return nil
	}
	for _, p := range defaultRead {
		if err := add(p, false, true); err != nil {
			return nil, nil, err
		}
	}
	for _, p := range defaultDevices {
		if _, err := os.Stat(p); err == nil {
			rules = append(rules, landlock.PathAccess(deviceRW, p))
		}
	}
	reads := slices.Concat(s.Read, []string{program})
	for _, p := range reads {
		if err := add(p, false, false); err != nil {
			return nil, nil, err
		}
	}
	writes := slices.Clone(s.Write)
	if sockDir != "" {
		writes = append(writes, sockDir)
	}
	for _, p := range writes {
		if err := add(p, true, false); err != nil {
			return nil, nil, err
		}
	}
	return rules, absent, nil
}

// setLimits sets the rlimits of s, never above the current hard limits.
func setLimits(s Spec) error {
	for _, l := range []struct {
		name     string
		resource int
		soft     int64
		grace    int64 // hard = soft + grace
	}{
		{"RLIMIT_AS", syscall.RLIMIT_AS, s.MemoryBytes, 0},
		{"RLIMIT_CPU", syscall.RLIMIT_CPU, s.CPUSeconds, 1}, // SIGXCPU, then SIGKILL a second later
		{"RLIMIT_NPROC", rlimitNProc, int64(s.Processes), 0},
	} {
		if l.soft <= 0 {
			continue
		}
		var cur syscall.Rlimit
		if err := syscall.Getrlimit(l.resource, &cur); err != nil {
			return fmt.Errorf("getrlimit %s: %w", l.name, err)
		}
		lim := syscall.Rlimit{Cur: min(uint64(l.soft), cur.Max), Max: min(uint64(l.soft+l.grace), cur.Max)}
		if err := syscall.Setrlimit(l.resource, &lim); err != nil {
			return fmt.Errorf("setrlimit %s %d: %w", l.name, l.soft, err)
		}
	}
	return nil
}

// rlimitNProc is RLIMIT_NPROC (the syscall package does not name it).
const rlimitNProc = 6
