package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/testkit/base"
)

// SoakConfig configures Soak. Zero fields take the defaults listed.
type SoakConfig struct {
	// Duration is how long the clients call (default 60 s).
	Duration time.Duration
	// Clients is the number of concurrent keep-alive clients (default 64).
	Clients int
	// Plugins names the named echo plugins installed in Dir; each serves
	// FuncName(name). Required.
	Plugins []string
	// Dir is the plugins directory the host serves; the chaos loop writes
	// new binaries into it. Required.
	Dir string
	// PluginBin is the named echo binary new generations are made from.
	// Required.
	PluginBin string
	// KillEvery is the SIGKILL period (default 200 ms; negative: none).
	KillEvery time.Duration
	// ReplaceEvery is the binary replacement period (default 2 s;
	// negative: none).
	ReplaceEvery time.Duration
	// CallTimeout is the host's call timeout (its --call-timeout); a call
	// not answered within CallTimeout + 1 s counts as hung. Default 5 s.
	CallTimeout time.Duration
	// SettleTimeout bounds the wait for every plugin to be ready again
	// after the chaos stops (default 20 s).
	SettleTimeout time.Duration
	// Log receives progress lines (default: none).
	Log func(format string, args ...any)
}

// SoakReport is the outcome of a soak.
type SoakReport struct {
	// Duration, Clients and Plugins are the soak's configuration.
	Duration time.Duration
	Clients  int
	Plugins  int
	// Sent counts the calls made; OK those answered with the right echo.
	Sent int64
	OK   int64
	// RPCErrors counts calls answered with a clean JSON-RPC error;
	// RPCErrorsByKind splits them by "code: message head".
	RPCErrors       int64
	RPCErrorsByKind map[string]int64
	// Unclean counts transport errors, non-JSON-RPC answers and wrong
	// echoes; UncleanSamples holds the first few.
	Unclean        int64
	UncleanSamples []string
	// Hung counts calls not answered within CallTimeout + 1 s.
	Hung int64
	// MaxLatency is the slowest call; P50 and P99 are of successful calls.
	MaxLatency time.Duration
	P50, P99   time.Duration
	// Kills counts SIGKILLs sent; Replaces the new binaries written;
	// Replaced the new generations the host was seen serving; PIDsSeen the
	// distinct plugin processes seen.
	Kills    int
	Replaces int
	Replaced int
	PIDsSeen int
	// Revived lists failed plugins revived by a new binary after the chaos.
	Revived []string
	// Before and After are the host's resource readings around the soak.
	Before, After ProcStats
	// HostAlive: the host still answered GET /health at the end.
	HostAlive bool
	// StopErr is the error of stopping the host (nil: clean stop).
	StopErr error
	// Leaked lists plugin processes left after the host stopped.
	Leaked []int
	// SetupErr is set when the host never served every plugin.
	SetupErr error
	// GoroutineDump holds the goroutine profile (debug=1) of an in-process
	// host whose goroutines grew beyond MaxGoroutineGrowth.
	GoroutineDump string
}

// Bounds on resource growth between before and after the soak that
// Failures accepts.
const (
	MaxFDGrowth        = 8
	MaxGoroutineGrowth = 24
)

// Failures lists what makes the soak fail: hung calls, unclean failures,
// a dead host, a failed stop, leaked plugin processes, fd or goroutine
// growth beyond the bounds. Empty means pass.
func (r *SoakReport) Failures() []string {
	var f []string
	if r.SetupErr != nil {
		f = append(f, "setup: "+r.SetupErr.Error())
	}
	if r.Hung > 0 {
		f = append(f, fmt.Sprintf("%d hung calls", r.Hung))
	}
	if r.Unclean > 0 {
		f = append(f, fmt.Sprintf("%d calls failed without a JSON-RPC error: %v", r.Unclean, r.UncleanSamples))
	}
	if r.Sent > 0 && r.OK == 0 {
		f = append(f, "no call succeeded")
	}
	if !r.HostAlive && r.SetupErr == nil {
		f = append(f, "host died")
	}
	if r.StopErr != nil {
		f = append(f, "stop: "+r.StopErr.Error())
	}
	if len(r.Leaked) > 0 {
		f = append(f, fmt.Sprintf("plugin processes left after the host stopped: %v", r.Leaked))
	}
	if r.Before.FDs >= 0 && r.After.FDs > r.Before.FDs+MaxFDGrowth {
		f = append(f, fmt.Sprintf("fds grew from %d to %d", r.Before.FDs, r.After.FDs))
	}
	if r.Before.Goroutines >= 0 && r.After.Goroutines > r.Before.Goroutines+MaxGoroutineGrowth {
		f = append(f, fmt.Sprintf("goroutines grew from %d to %d", r.Before.Goroutines, r.After.Goroutines))
	}
	return f
}

// String renders the report as a Markdown table.
func (r *SoakReport) String() string {
	var b strings.Builder
	gor := func(n int) string {
		if n < 0 {
			return "n/a"
		}
		return fmt.Sprint(n)
	}
	fmt.Fprintf(&b, "| soak | value |\n|---|---|\n")
	row := func(k string, v any) { fmt.Fprintf(&b, "| %s | %v |\n", k, v) }
	row("duration / clients / plugins", fmt.Sprintf("%v / %d / %d", r.Duration.Round(time.Millisecond), r.Clients, r.Plugins))
	row("chaos", fmt.Sprintf("%d SIGKILLs, %d binaries replaced (%d generations served), %d plugin processes seen", r.Kills, r.Replaces, r.Replaced, r.PIDsSeen))
	row("calls sent", r.Sent)
	row("succeeded", fmt.Sprintf("%d (%.1f%%)", r.OK, pct(r.OK, r.Sent)))
	row("failed, clean JSON-RPC error", fmt.Sprintf("%d (%.1f%%)", r.RPCErrors, pct(r.RPCErrors, r.Sent)))
	row("failed, unclean", r.Unclean)
	row("hung (> deadline + 1 s)", r.Hung)
	row("latency of successes p50 / p99 / max of all", fmt.Sprintf("%v / %v / %v", r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.MaxLatency.Round(time.Millisecond)))
	row("host alive at the end", r.HostAlive)
	row("fds before → after", fmt.Sprintf("%d → %d", r.Before.FDs, r.After.FDs))
	row("goroutines before → after", fmt.Sprintf("%s → %s", gor(r.Before.Goroutines), gor(r.After.Goroutines)))
	row("threads before → after", fmt.Sprintf("%d → %d", r.Before.Threads, r.After.Threads))
	row("RSS before → after (MiB)", fmt.Sprintf("%.1f → %.1f", float64(r.Before.RSSKiB)/1024, float64(r.After.RSSKiB)/1024))
	row("clean stop", r.StopErr == nil)
	row("plugin processes left after stop", len(r.Leaked))
	if len(r.Revived) > 0 {
		row("crash-looped plugins revived after the chaos", strings.Join(r.Revived, ", "))
	}
	if len(r.RPCErrorsByKind) > 0 {
		kinds := make([]string, 0, len(r.RPCErrorsByKind))
		for k := range r.RPCErrorsByKind {
			kinds = append(kinds, k)
		}
		sort.Slice(kinds, func(i, j int) bool { return r.RPCErrorsByKind[kinds[i]] > r.RPCErrorsByKind[kinds[j]] })
		for _, k := range kinds {
			row("error: "+strings.ReplaceAll(k, "|", "/"), r.RPCErrorsByKind[k])
		}
	}
	return b.String()
}

func pct(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// Soak runs cfg.Clients clients calling the plugins' functions on t for
// cfg.Duration while a chaos loop SIGKILLs a random ready plugin every
// KillEvery and writes a new binary for a random plugin every
// ReplaceEvery. Then it stops the chaos, revives plugins the host marked
// failed (crash loop) by writing them a new binary, waits for every plugin
// to be ready, compares the host's fds and goroutines with those before,
// stops the host and looks for plugin processes left behind. t must
// already serve every plugin. Soak stops t.
func Soak(t Target, cfg SoakConfig) *SoakReport {
	if cfg.Duration <= 0 {
		cfg.Duration = 60 * time.Second
	}
	if cfg.Clients <= 0 {
		cfg.Clients = 64
	}
	if cfg.KillEvery == 0 {
		cfg.KillEvery = 200 * time.Millisecond
	}
	if cfg.ReplaceEvery == 0 {
		cfg.ReplaceEvery = 2 * time.Second
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 5 * time.Second
	}
	if cfg.SettleTimeout <= 0 {
		cfg.SettleTimeout = 20 * time.Second
	}
	logf := cfg.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	r := &SoakReport{Duration: cfg.Duration, Clients: cfg.Clients, Plugins: len(cfg.Plugins), RPCErrorsByKind: map[string]int64{}}
	ctl := NewHTTPClient(4, 5*time.Second) // health checks, not counted
	defer ctl.CloseIdleConnections()

	if _, err := WaitHealthy(t, ctl, len(cfg.Plugins), cfg.SettleTimeout); err != nil {
		r.SetupErr = err
		r.HostAlive = t.Alive()
		r.StopErr = stopTarget(t)
		r.Leaked = leftovers(t)
		return r
	}
	r.Before = settledStats(t, ProcStats{Goroutines: -1, FDs: -1})

	var (
		mu       sync.Mutex
		pids     = map[int]bool{}
		gens     = map[string]int{}
		sums     = map[string]bool{}
		rpcKinds = map[string]int64{}
		lats     []time.Duration
	)
	noteHealth := func() []supervise.PluginStatus {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		h, err := GetHealth(ctx, ctl, t.URL())
		if err != nil {
			return nil
		}
		mu.Lock()
		for _, p := range h.Plugins {
			if p.PID > 0 {
				pids[p.PID] = true
			}
			if p.SHA256 != "" {
				sums[p.SHA256] = true
			}
		}
		mu.Unlock()
		return h.Plugins
	}
	noteHealth()
	initialSums := len(sums)

	// Clients.
	client := NewHTTPClient(cfg.Clients, cfg.CallTimeout+time.Second)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sent, ok, rpcErr, unclean, hung, kills, replaces atomic.Int64
	var maxLat atomic.Int64
	for c := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			var buf bytes.Buffer
			var mine []time.Duration
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					mu.Lock()
					lats = append(lats, mine...)
					mu.Unlock()
					return
				default:
				}
				name := cfg.Plugins[rng.IntN(len(cfg.Plugins))]
				params := fmt.Appendf(nil, `{"data":"c%d-%d"}`, c, seq)
				body := CallBody(FuncName(name), params, seq)
				sent.Add(1)
				start := time.Now()
				status, resp, err := Post(context.Background(), client, t.URL()+"/opentool/call", body, &buf)
				d := time.Since(start)
				for {
					m := maxLat.Load()
					if int64(d) <= m || maxLat.CompareAndSwap(m, int64(d)) {
						break
					}
				}
				var ue interface{ Timeout() bool }
				switch {
				case err != nil && errors.As(err, &ue) && ue.Timeout():
					hung.Add(1)
				case err != nil:
					unclean.Add(1)
					noteUnclean(&mu, r, fmt.Sprintf("%s: %v", name, err))
				case CheckEcho(resp, params) == nil && status == http.StatusOK:
					ok.Add(1)
					mine = append(mine, d)
				default:
					kind, clean := classifyRPCError(resp)
					if clean {
						rpcErr.Add(1)
						mu.Lock()
						rpcKinds[kind]++
						mu.Unlock()
					} else {
						unclean.Add(1)
						noteUnclean(&mu, r, fmt.Sprintf("%s: HTTP %d %s", name, status, head(resp, 200)))
					}
				}
			}
		}()
	}

	// Chaos.
	chaosDone := make(chan struct{})
	go func() {
		defer close(chaosDone)
		rng := rand.New(rand.NewPCG(42, 42))
		var killT, replT <-chan time.Time
		if cfg.KillEvery > 0 {
			tk := time.NewTicker(cfg.KillEvery)
			defer tk.Stop()
			killT = tk.C
		}
		if cfg.ReplaceEvery > 0 {
			tr := time.NewTicker(cfg.ReplaceEvery)
			defer tr.Stop()
			replT = tr.C
		}
		end := time.After(cfg.Duration)
		for {
			select {
			case <-end:
				return
			case <-killT:
				ps := noteHealth()
				var ready []supervise.PluginStatus
				for _, p := range ps {
					if p.State.Serving() && p.PID > 0 {
						ready = append(ready, p)
					}
				}
				if len(ready) == 0 {
					continue
				}
				v := ready[rng.IntN(len(ready))]
				if syscall.Kill(v.PID, syscall.SIGKILL) == nil {
					kills.Add(1)
				}
			case <-replT:
				name := cfg.Plugins[rng.IntN(len(cfg.Plugins))]
				mu.Lock()
				gens[name]++
				g := gens[name]
				mu.Unlock()
				if _, err := WriteNamedPlugin(cfg.PluginBin, cfg.Dir, name, g); err != nil {
					logf("replace %s: %v", name, err)
					continue
				}
				replaces.Add(1)
			}
		}
	}()
	progress := time.NewTicker(10 * time.Second)
	start := time.Now()
wait:
	for {
		select {
		case <-chaosDone:
			break wait
		case <-progress.C:
			logf("soak %v: sent %d ok %d rpc-errors %d unclean %d hung %d kills %d replaces %d",
				time.Since(start).Round(time.Second), sent.Load(), ok.Load(), rpcErr.Load(), unclean.Load(), hung.Load(), kills.Load(), replaces.Load())
		}
	}
	progress.Stop()
	close(stop)
	wg.Wait()
	client.CloseIdleConnections()
	r.Sent, r.OK, r.RPCErrors, r.Unclean, r.Hung = sent.Load(), ok.Load(), rpcErr.Load(), unclean.Load(), hung.Load()
	r.Kills, r.Replaces = int(kills.Load()), int(replaces.Load())
	r.MaxLatency = time.Duration(maxLat.Load())
	r.RPCErrorsByKind = rpcKinds
	SortDurations(lats)
	r.P50, r.P99 = Percentile(lats, 50), Percentile(lats, 99)

	// Let the host settle: plugins it marked failed (crash loop) come back
	// only when their file changes, as an operator would do it.
	time.Sleep(200 * time.Millisecond)
	for _, p := range noteHealth() {
		if p.State == core.StateFailed {
			mu.Lock()
			gens[p.Name]++
			g := gens[p.Name]
			mu.Unlock()
			if _, err := WriteNamedPlugin(cfg.PluginBin, cfg.Dir, p.Name, g); err == nil {
				r.Revived = append(r.Revived, p.Name)
			}
		}
	}
	if _, err := WaitHealthy(t, ctl, len(cfg.Plugins), cfg.SettleTimeout); err != nil {
		logf("after the soak: %v", err)
	}
	noteHealth()
	r.Replaced = len(sums) - initialSums
	r.PIDsSeen = len(pids)
	ctl.CloseIdleConnections()
	r.After = settledStats(t, r.Before)
	if _, ok := t.(*InProcess); ok && r.After.Goroutines > r.Before.Goroutines+MaxGoroutineGrowth {
		var b strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
		r.GoroutineDump = b.String()
	}
	r.HostAlive = t.Alive()
	if r.HostAlive {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := GetHealth(ctx, ctl, t.URL())
		cancel()
		r.HostAlive = err == nil
	}
	ctl.CloseIdleConnections()
	r.StopErr = stopTarget(t)
	r.Leaked = leftovers(t)
	return r
}

// settledStats reads t's stats, re-reading for up to 3 s while fds or
// goroutines are above those of ref (connections and goroutines of
// finished calls take a moment to go away).
func settledStats(t Target, ref ProcStats) ProcStats {
	s := t.Stats()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) && ((ref.FDs >= 0 && s.FDs > ref.FDs) || (ref.Goroutines >= 0 && s.Goroutines > ref.Goroutines)) {
		time.Sleep(50 * time.Millisecond)
		s = t.Stats()
	}
	if ref.FDs < 0 { // the "before" reading: give stragglers a moment
		time.Sleep(100 * time.Millisecond)
		s = t.Stats()
	}
	return s
}

func stopTarget(t Target) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return t.Stop(ctx)
}

// leftovers waits up to 3 s for t's plugin processes to be gone and
// returns those still there.
func leftovers(t Target) []int {
	parent := 0
	if t.PID() == os.Getpid() {
		parent = t.PID()
	}
	var left []int
	_, _ = base.Poll(3*time.Second, 20*time.Millisecond, func() bool {
		left = ProcsUnder(t.StateDir(), parent)
		return len(left) == 0
	})
	return left
}

func noteUnclean(mu *sync.Mutex, r *SoakReport, s string) {
	mu.Lock()
	defer mu.Unlock()
	if len(r.UncleanSamples) < 5 {
		r.UncleanSamples = append(r.UncleanSamples, s)
	}
}

// classifyRPCError reports whether resp is a JSON-RPC error response and a
// short kind for it: "CODE: first words of the message".
func classifyRPCError(resp []byte) (string, bool) {
	var m struct {
		JSONRPC string `json:"jsonrpc"`
		Error   *struct {
			Code    *int   `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(resp, &m) != nil || m.JSONRPC != "2.0" || m.Error == nil || m.Error.Code == nil || m.Error.Message == "" {
		return "", false
	}
	return fmt.Sprintf("%d: %s", *m.Error.Code, kindOf(m.Error.Message)), true
}

// kindOf cuts a message to its stable head (names, pids and details
// dropped), e.g. `plugin "p3" exited (pid 123, signal: killed) during the
// call` → `plugin exited during the call`.
func kindOf(msg string) string {
	switch { // the cause comes first; a failed plugin's reason names its last exit
	case strings.Contains(msg, "plugin failed"):
		return "plugin failed (crash loop)"
	case strings.Contains(msg, "timed out"):
		return "call timed out"
	case strings.Contains(msg, "exited") && strings.Contains(msg, "during the call"):
		return "plugin exited during the call"
	case strings.Contains(msg, "connection lost"):
		return "plugin connection lost"
	case strings.Contains(msg, "busy"):
		return "plugin busy"
	case strings.Contains(msg, "stopped"):
		return "plugin stopped"
	}
	return head([]byte(msg), 60)
}

func head(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
