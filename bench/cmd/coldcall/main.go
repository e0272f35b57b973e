// Command coldcall compares two builds of opentool-host, A and B, in one
// run: for each, a real host process serving the calculator plugin is
// started -rounds times, interleaved A, B, A, B, ..., and each time it
// measures
//
//   - cold start: from exec to the first POST /opentool/call of add that
//     answers 3 (the plugin's handshake, mTLS and load included);
//   - the p50 of -n sequential calls of add after 300 warm-up calls;
//
// with the data channel (the default) and with OPENTOOL_PLUGIN_TRANSPORT
// =grpc. It prints the median of each figure per build and B/A. Each
// folder holds opentool-host and opentool-plugin-calculator, e.g. from
// `make host plugins` at two commits:
//
//	go run ./bench/cmd/coldcall -a /tmp/before -b bin-and-plugins-dir
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/opentool-host/opentool-host/bench/harness"
)

func main() {
	a := flag.String("a", "", "folder of build A: opentool-host and opentool-plugin-calculator")
	b := flag.String("b", "", "folder of build B")
	rounds := flag.Int("rounds", 7, "host starts per build and transport")
	n := flag.Int("n", 3000, "sequential calls measured per start")
	flag.Parse()
	if *a == "" || *b == "" || *rounds < 1 || *n < 1 {
		log.Fatal("usage: coldcall -a DIR -b DIR [-rounds N] [-n N]")
	}
	for _, transport := range []string{"", "grpc"} {
		cold := map[string][]time.Duration{}
		p50 := map[string][]time.Duration{}
		for r := 0; r < *rounds; r++ {
			for _, dir := range []string{*a, *b} {
				c, p, err := measure(dir, transport, *n)
				if err != nil {
					log.Fatalf("%s: %v", dir, err)
				}
				cold[dir], p50[dir] = append(cold[dir], c), append(p50[dir], p)
			}
		}
		name := map[string]string{"": "default (data channel)", "grpc": "grpc"}[transport]
		ca, cb := median(cold[*a]), median(cold[*b])
		pa, pb := median(p50[*a]), median(p50[*b])
		fmt.Printf("transport=%s cold start A %v B %v (B/A %.2f); /opentool/call p50 A %v B %v (B/A %.2f)\n",
			name, ca.Round(100*time.Microsecond), cb.Round(100*time.Microsecond), float64(cb)/float64(ca),
			pa.Round(time.Microsecond), pb.Round(time.Microsecond), float64(pb)/float64(pa))
	}
}

// measure starts dir's host with the calculator in a new plugins folder
// and returns its cold start and the p50 of n sequential calls.
func measure(dir, transport string, n int) (cold, p50 time.Duration, err error) {
	plugins, err := os.MkdirTemp("", "coldcall-plugins-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(plugins)
	state, err := os.MkdirTemp("", "coldcall-state-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(state)
	bin, err := os.ReadFile(filepath.Join(dir, "opentool-plugin-calculator"))
	if err != nil {
		return 0, 0, err
	}
	if err := os.WriteFile(filepath.Join(plugins, "opentool-plugin-calculator"), bin, 0o755); err != nil {
		return 0, 0, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(filepath.Join(dir, "opentool-host"), "run", "--dir", plugins, "--addr", addr, "--state-dir", state, "--log-level", "error")
	cmd.Env = os.Environ()
	if transport != "" {
		cmd.Env = append(cmd.Env, "OPENTOOL_PLUGIN_TRANSPORT="+transport)
	}
	c := harness.NewHTTPClient(1, 10*time.Second)
	url := "http://" + addr + "/opentool/call"
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	defer func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }()
	for !add(c, url) {
		if time.Since(start) > 30*time.Second {
			return 0, 0, fmt.Errorf("no answer within 30 s")
		}
		time.Sleep(time.Millisecond)
	}
	cold = time.Since(start)
	for range 300 {
		add(c, url)
	}
	lat := make([]time.Duration, n)
	for i := range lat {
		t0 := time.Now()
		if !add(c, url) {
			return 0, 0, fmt.Errorf("call %d failed", i)
		}
		lat[i] = time.Since(t0)
	}
	return cold, harness.Percentile(harness.SortDurations(lat), 50), nil
}

var addBody = []byte(`{"jsonrpc":"2.0","method":"add","params":{"a":1,"b":2},"id":1}`)

// add calls add(1, 2) and reports whether the answer is 3.
func add(c *http.Client, url string) bool {
	r, err := c.Post(url, "application/json", bytes.NewReader(addBody))
	if err != nil {
		return false
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	return r.StatusCode == http.StatusOK && strings.Contains(string(b), `"result":3`)
}

// median is the median of d (d is not changed).
func median(d []time.Duration) time.Duration {
	return harness.Percentile(harness.SortDurations(append([]time.Duration(nil), d...)), 50)
}
