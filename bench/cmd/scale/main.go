// Command scale is make bench-scale: it measures a real opentool-host
// process (bin/opentool-host run) serving -plugins named echo plugins:
//
//   - cold start: from exec to every plugin's function answering;
//   - the host's RSS (VmRSS of /proc/PID/status) with every plugin loaded
//     and called;
//   - SIGKILL recovery: from a plugin's SIGKILL to its function answering
//     again (-kills trials, each on a different plugin);
//   - hot reload: from a new binary renamed into --dir to its function
//     answering (-drops trials; needs the watcher);
//
// then stops the host with SIGTERM and checks that no plugin process is
// left. It prints a Markdown table with its targets.
//
//	go run ./bench/cmd/scale -host bin/opentool-host -plugins 50
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/opentool-host/opentool-host/bench/harness"
	"github.com/opentool-host/opentool-host/testkit/base"
)

func main() { os.Exit(run()) }

// The scale targets.
const (
	targetRSSBytes = 80e6
	targetDropIn   = 500 * time.Millisecond
	targetRecovery = 300 * time.Millisecond
)

func run() int {
	var (
		hostBin = flag.String("host", "bin/opentool-host", "the opentool-host binary")
		plugins = flag.Int("plugins", 50, "plugins served")
		kills   = flag.Int("kills", 10, "SIGKILL recovery trials")
		drops   = flag.Int("drops", 5, "hot-reload trials")
	)
	flag.Parse()
	log.SetFlags(log.Ltime)

	tmp, err := os.MkdirTemp("", "opentool-scale-")
	if err != nil {
		log.Print(err)
		return 1
	}
	defer os.RemoveAll(tmp)
	bin, err := base.Build("./testkit/plugins/echo", tmp)
	if err != nil {
		log.Print(err)
		return 1
	}
	fi, _ := os.Stat(bin)
	dir, state := filepath.Join(tmp, "plugins"), filepath.Join(tmp, "state")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Print(err)
		return 1
	}
	names := make([]string, *plugins)
	for i := range names {
		names[i] = fmt.Sprintf("p%02d", i)
		if _, err := harness.WriteNamedPlugin(bin, dir, names[i], 0); err != nil {
			log.Print(err)
			return 1
		}
	}
	abs, err := filepath.Abs(*hostBin)
	if err != nil {
		log.Print(err)
		return 1
	}

	client := harness.NewHTTPClient(4, 10*time.Second)
	log.Printf("starting %s with %d plugins (%d MB binaries)", *hostBin, *plugins, fi.Size()>>20)
	start := time.Now()
	p, err := harness.StartHostProcess(abs, harness.HostOptions{Dir: dir, StateDir: state})
	if err != nil {
		log.Print(err)
		return 1
	}
	stopped := false
	defer func() {
		if !stopped {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			_ = p.Stop(ctx)
			cancel()
		}
	}()
	if _, err := harness.WaitHealthy(p, client, *plugins, 120*time.Second); err != nil {
		log.Printf("%v\nhost output:\n%.4000s", err, p.Output())
		return 1
	}
	for _, n := range names {
		if err := callOnce(client, p.URL(), n); err != nil {
			log.Printf("call %s after start: %v", n, err)
			return 1
		}
	}
	cold := time.Since(start)
	log.Printf("cold start: %d plugins served in %v", *plugins, cold)

	// Warm every plugin, then read the host's RSS and the plugins'.
	for range 20 {
		for _, n := range names {
			if err := callOnce(client, p.URL(), n); err != nil {
				log.Printf("warm-up call %s: %v", n, err)
				return 1
			}
		}
	}
	time.Sleep(500 * time.Millisecond)
	hs := p.Stats()
	var pluginRSS int64
	var pluginCount int
	if h, err := harness.GetHealth(context.Background(), client, p.URL()); err == nil {
		for _, ps := range h.Plugins {
			if ps.PID > 0 {
				if s := harness.ReadProcStats(ps.PID); s.RSSKiB > 0 {
					pluginRSS += s.RSSKiB
					pluginCount++
				}
			}
		}
	}
	log.Printf("host VmRSS %.1f MiB (VmHWM %.1f MiB), %d threads, %d fds; %d plugins' RSS %.0f MiB", mib(hs.RSSKiB), mib(hs.HWMKiB), hs.Threads, hs.FDs, pluginCount, mib(pluginRSS))

	// SIGKILL → answering again, each trial on another plugin (a plugin
	// killed twice within the restart policy's ResetAfter backs off longer).
	var rec []time.Duration
	for k := range min(*kills, *plugins) {
		name := names[(k*7)%len(names)]
		pid := pluginPID(client, p.URL(), name)
		if pid <= 0 {
			log.Printf("kill trial %d: no pid for %s", k, name)
			continue
		}
		t0 := time.Now()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			log.Printf("kill %d: %v", pid, err)
			continue
		}
		d, err := base.Poll(10*time.Second, time.Millisecond, func() bool { return callOnce(client, p.URL(), name) == nil })
		if err != nil {
			log.Printf("plugin %s never answered again after SIGKILL", name)
			continue
		}
		_ = d
		rec = append(rec, time.Since(t0))
		time.Sleep(200 * time.Millisecond)
	}
	harness.SortDurations(rec)
	log.Printf("SIGKILL → answering again: %v", rec)

	// Drop-in → served.
	var drop []time.Duration
	watcherOK := true
	for k := range *drops {
		name := fmt.Sprintf("new%d", k)
		if _, err := harness.WriteNamedPlugin(bin, dir, name, 0); err != nil {
			log.Print(err)
			return 1
		}
		t0 := time.Now() // the file is in place (renamed)
		_, err := base.Poll(10*time.Second, 2*time.Millisecond, func() bool { return callOnce(client, p.URL(), name) == nil })
		if err != nil {
			log.Printf("dropped plugin %s not served after 10 s: is the watcher working?", name)
			watcherOK = false
			break
		}
		drop = append(drop, time.Since(t0))
		time.Sleep(200 * time.Millisecond)
	}
	harness.SortDurations(drop)
	log.Printf("drop-in → served: %v", drop)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	stopErr := p.Stop(ctx)
	cancel()
	stopped = true
	var left []int
	_, _ = base.Poll(3*time.Second, 20*time.Millisecond, func() bool { left = harness.ProcsUnder(state, 0); return len(left) == 0 })

	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	fmt.Printf("\n## Scale (%d named echo plugins, %d MB binaries each; real %s process)\n\n", *plugins, fi.Size()>>20, *hostBin)
	fmt.Println("| figure | measured | target | |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| cold start → all %d plugins' functions answering | %v | — | |\n", *plugins, cold.Round(time.Millisecond))
	rssBytes := float64(hs.RSSKiB) * 1024
	fmt.Printf("| host VmRSS, %d plugins loaded and called | %.1f MiB = %.1f MB (peak VmHWM %.1f MiB) | ≤ 80 MB | %s |\n",
		*plugins, mib(hs.RSSKiB), rssBytes/1e6, mib(hs.HWMKiB), met(rssBytes <= targetRSSBytes))
	fmt.Printf("| host threads / fds with %d plugins | %d / %d | — | |\n", *plugins, hs.Threads, hs.FDs)
	fmt.Printf("| plugins' RSS (sum of %d processes, for scale) | %.0f MiB | — | |\n", pluginCount, mib(pluginRSS))
	if len(rec) > 0 {
		fmt.Printf("| SIGKILL → function answering again (median / max of %d) | %v / %v | ≤ 300 ms | %s |\n",
			len(rec), harness.Percentile(rec, 50).Round(time.Millisecond), rec[len(rec)-1].Round(time.Millisecond), met(rec[len(rec)-1] <= targetRecovery))
	}
	if len(drop) > 0 {
		fmt.Printf("| binary dropped into --dir → function answering (median / max of %d) | %v / %v | ≤ 500 ms | %s |\n",
			len(drop), harness.Percentile(drop, 50).Round(time.Millisecond), drop[len(drop)-1].Round(time.Millisecond), met(drop[len(drop)-1] <= targetDropIn))
	} else {
		fmt.Println("| binary dropped into --dir → function answering | not served within 10 s (watcher not working) | ≤ 500 ms | NOT met |")
	}
	fmt.Printf("| SIGTERM stop, plugin processes left | %s, %d left | clean, 0 | %s |\n", okErr(stopErr), len(left), met(stopErr == nil && len(left) == 0))
	if !watcherOK || stopErr != nil || len(left) > 0 {
		return 1
	}
	return 0
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

func okErr(err error) string {
	if err == nil {
		return "clean"
	}
	return err.Error()
}

// callOnce calls the echo function of plugin name and checks the echo.
func callOnce(c *http.Client, url, name string) error {
	params := []byte(`{"data":"scale"}`)
	var buf bytes.Buffer
	st, resp, err := harness.Post(context.Background(), c, url+"/opentool/call", harness.CallBody(harness.FuncName(name), params, 1), &buf)
	if err != nil {
		return err
	}
	if st != http.StatusOK {
		return fmt.Errorf("HTTP %d", st)
	}
	return harness.CheckEcho(resp, params)
}

// pluginPID returns the pid of plugin name from GET /health.
func pluginPID(c *http.Client, url, name string) int {
	h, err := harness.GetHealth(context.Background(), c, url)
	if err != nil {
		return 0
	}
	for _, p := range h.Plugins {
		if p.Name == name {
			return p.PID
		}
	}
	return 0
}
