package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/testkit"
)

// This file runs several opentool-host processes behind a load balancer
// of the test's own, as Kubernetes would run replicas behind a Service.
//
// The balancer (lb) is an httputil.ReverseProxy whose Transport picks a
// backend round-robin for every request (no affinity of any kind) and
// behaves as a real balancer does:
//   - it probes each backend's GET /health?ready=1 every 100 ms, without
//     an API key, and sends requests only to backends whose last
//     definite answer was 200; a 503 or a refused connection takes a
//     backend out at once, a probe that times out changes nothing (as a
//     failure threshold above 1 would);
//   - it retries a request on another backend only when the connection
//     to the first could not be made (dial failed: nothing was sent), as
//     Envoy's retry_on: connect-failure does; a request that was sent is
//     never retried, so a replica that cut a call would fail the test.
//
// Backend connections are kept alive and reused, as a proxy does.

// replicaDrainDelay is the replicas' --drain-delay: ten readiness probe
// periods of the balancer, so that a loaded machine (make test runs
// packages in parallel) still sees the 503 before the listener closes.
const replicaDrainDelay = time.Second

// replicaKey is the API key of every replica; clients send it, the
// balancer's readiness probes do not.
const replicaKey = "replica-key"

// backend is one replica as the balancer sees it.
type backend struct {
	name string
	addr string // 127.0.0.1:PORT
	// ready is the last definite answer of the readiness probe (200).
	ready atomic.Bool
	// out is closed, with outCause set, when the balancer takes the
	// backend out after it was ready: "503 {"status":"draining"}",
	// "connect: connection refused", ...
	out      chan struct{}
	outOnce  sync.Once
	outCause string
	outAt    time.Time

	mu   sync.Mutex
	hits map[string]int // requests sent to it, by path
	stop chan struct{}  // ends the prober
}

// takeOut records that the balancer took b out, why and when.
func (b *backend) takeOut(cause string) {
	b.ready.Store(false)
	b.outOnce.Do(func() {
		b.outCause, b.outAt = cause, time.Now()
		close(b.out)
	})
}

// hit counts a request sent to b.
func (b *backend) hit(path string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.hits[path]++
}

// hitCounts returns a copy of the requests sent to b, by path.
func (b *backend) hitCounts() map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.hits)
}

// hitsOf returns the requests of path sent to b; "" counts them all.
func (b *backend) hitsOf(path string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if path != "" {
		return b.hits[path]
	}
	n := 0
	for _, c := range b.hits {
		n += c
	}
	return n
}

// lb is the test's round-robin load balancer; it is the http.RoundTripper
// of its ReverseProxy.
type lb struct {
	t        *testing.T
	tr       *http.Transport // to the backends
	probe    *http.Client
	mu       sync.Mutex
	backends []*backend
	next     int
	retried  atomic.Int64 // requests retried after a connect failure
	noneUp   atomic.Int64 // requests with no ready backend
}

func newLB(t *testing.T) *lb {
	l := &lb{
		t:     t,
		tr:    &http.Transport{MaxIdleConnsPerHost: 32, IdleConnTimeout: 30 * time.Second, DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext},
		probe: &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
	}
	t.Cleanup(func() {
		l.mu.Lock()
		for _, b := range l.backends {
			close(b.stop)
		}
		l.backends = nil
		l.mu.Unlock()
		l.tr.CloseIdleConnections()
	})
	return l
}

// add puts a backend into rotation (out of service until its first
// readiness probe answers 200) and starts probing it.
func (l *lb) add(name, addr string) *backend {
	b := &backend{name: name, addr: addr, out: make(chan struct{}), hits: map[string]int{}, stop: make(chan struct{})}
	l.mu.Lock()
	l.backends = append(l.backends, b)
	l.mu.Unlock()
	go l.prober(b)
	return b
}

// remove takes b out of rotation for good (it left the endpoints).
func (l *lb) remove(b *backend) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, x := range l.backends {
		if x == b {
			l.backends = append(l.backends[:i], l.backends[i+1:]...)
			close(b.stop)
			return
		}
	}
}

// prober polls b's readiness every 100 ms until b is removed.
func (l *lb) prober(b *backend) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := l.probe.Get("http://" + b.addr + "/health?ready=1")
		switch {
		case err == nil:
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				b.ready.Store(true)
			} else if b.ready.Load() {
				b.takeOut(fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(body)))
			}
		case connectFailure(err):
			if b.ready.Load() {
				b.takeOut("connect: " + err.Error())
			}
		}
		select {
		case <-b.stop:
			return
		case <-tick.C:
		}
	}
}

// pick returns the next ready backend round-robin, skipping tried ones;
// nil when there is none.
func (l *lb) pick(tried map[*backend]bool) *backend {
	l.mu.Lock()
	defer l.mu.Unlock()
	for range l.backends {
		b := l.backends[l.next%len(l.backends)]
		l.next++
		if b.ready.Load() && !tried[b] {
			return b
		}
	}
	return nil
}

// connectFailure reports whether err is a failure to connect (nothing
// was sent).
func connectFailure(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// RoundTrip sends req to the next ready backend; when the connection
// cannot be made it takes that backend out and tries the next one.
func (l *lb) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	tried := map[*backend]bool{}
	for {
		b := l.pick(tried)
		if b == nil {
			l.noneUp.Add(1)
			return nil, errors.New("lb: no ready backend")
		}
		out := req.Clone(req.Context())
		out.URL.Scheme, out.URL.Host, out.Host = "http", b.addr, b.addr
		if body != nil {
			out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		}
		resp, err := l.tr.RoundTrip(out)
		if err != nil && connectFailure(err) {
			b.takeOut("connect: " + err.Error())
			tried[b] = true
			l.retried.Add(1)
			continue
		}
		if err == nil {
			b.hit(req.URL.Path)
		}
		return resp, err
	}
}

// serve starts the balancer's ReverseProxy on loopback and returns its URL.
func (l *lb) serve() string {
	rp := &httputil.ReverseProxy{
		// The backend is chosen per attempt by the Transport (l).
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "balanced" },
		Transport: l,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			l.t.Logf("lb: %s %s: %v", r.Method, r.URL.Path, err)
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	return testkit.Serve(l.t, rp)
}

// replica is one opentool-host process and its place in the balancer.
type replica struct {
	hp *hostProc
	b  *backend
}

// replicaTransport is the clients' connection pool to the balancer.
var replicaTransport = &http.Transport{MaxIdleConnsPerHost: 16}

// replicaHTTP is the client of the replica test: every request bounded,
// the key sent.
var replicaHTTP = &http.Client{Timeout: 15 * time.Second, Transport: keyed{replicaTransport, replicaKey}}

// keyed is a RoundTripper that sends key as a Bearer token over rt.
type keyed struct {
	rt  http.RoundTripper
	key string
}

func (k keyed) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+k.key)
	return k.rt.RoundTrip(req)
}

// postTo posts body to url+path and returns the status and body.
func postTo(url, path, body string) (int, string, error) {
	resp, err := replicaHTTP.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// callAdd calls add(a, b) over /opentool/call and checks the sum.
func callAdd(url string, a, b int) error {
	code, body, err := postTo(url, "/opentool/call", fmt.Sprintf(`{"jsonrpc":"2.0","method":"add","params":{"a":%d,"b":%d},"id":"x"}`, a, b))
	if err != nil {
		return err
	}
	var r struct {
		Result struct{ Result float64 }
		Error  any
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || code != 200 || r.Error != nil || r.Result.Result != float64(a+b) {
		return fmt.Errorf("/opentool/call add: %d %s", code, body)
	}
	return nil
}

// streamRead calls the mock's sequentiallyRead over /opentool/streamCall
// and checks its two items and the end of the stream.
func streamRead(url string) error {
	code, body, err := postTo(url, "/opentool/streamCall", `{"jsonrpc":"2.0","method":"sequentiallyRead","id":"s"}`)
	if err != nil {
		return err
	}
	if code != 200 || strings.Count(body, "event:data") != 2 || !strings.Contains(body, `"data":"Hello"`) || !strings.Contains(body, `"data":"World"`) || !strings.HasSuffix(body, "event:done\ndata:{\"done\":\"sequentiallyRead\"}\n\n") {
		return fmt.Errorf("/opentool/streamCall: %d %q", code, body)
	}
	return nil
}

// otcAdd calls Calculator.add over /otc/call and checks the sum.
func otcAdd(url string, a, b int) error {
	code, body, err := postTo(url, "/otc/call", fmt.Sprintf(`{"request":{"call_id":"c","tool_id":"Calculator.add","input":{"a":%d,"b":%d}}}`, a, b))
	if err != nil {
		return err
	}
	var r struct {
		Success bool
		Output  struct{ Value struct{ Result float64 } }
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || code != 200 || !r.Success || r.Output.Value.Result != float64(a+b) {
		return fmt.Errorf("/otc/call: %d %s", code, body)
	}
	return nil
}

// mcpConnect opens a stateless MCP client session to url+"/mcp" (no
// retries: a failed request is a failed call).
func mcpConnect(url string) (*mcp.ClientSession, error) {
	tr := &mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: replicaHTTP, MaxRetries: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return mcp.NewClient(&mcp.Implementation{Name: "replicas", Version: "1"}, nil).Connect(ctx, tr, nil)
}

// mcpAdd calls the add tool over MCP and checks the sum.
func mcpAdd(cs *mcp.ClientSession, a, b int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": a, "b": b}})
	if err != nil {
		return fmt.Errorf("/mcp tools/call: %w", err)
	}
	m, _ := res.StructuredContent.(map[string]any)
	if res.IsError || m["result"] != float64(a+b) {
		return fmt.Errorf("/mcp tools/call add: %+v", res)
	}
	return nil
}

// The paths the clients use, one per front end.
var replicaPaths = []string{"/opentool/call", "/opentool/streamCall", "/otc/call", "/mcp"}

// TestReplicasBehindLoadBalancer: three replicas behind a round-robin
// balancer answer every front end with no affinity (one MCP session's
// requests land on all three), and a rolling restart (SIGTERM one replica
// at a time, a replacement started once it exited) under continuous load
// from 8 clients fails no call.
func TestReplicasBehindLoadBalancer(t *testing.T) {
	testStart := time.Now()
	dir := t.TempDir() // the replicas' plugins, as an image or a volume would give them
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	testkit.InstallPlugin(t, dir, "mock", "./plugins/mock")
	l := newLB(t)
	url := l.serve()
	// Before the balancer's server shuts down: a connection the clients
	// opened but never used would hold its Shutdown for 5 s.
	t.Cleanup(replicaTransport.CloseIdleConnections)
	seq := 0
	start := func() *replica {
		seq++
		// Replicas behind a balancer serve /mcp stateless, as the
		// Kubernetes base runs them.
		hp := startHostProc(t, dir, "--api-key", replicaKey, "--drain-delay", replicaDrainDelay.String(), "--shutdown-timeout", "10s", "--log-level", "info", "--mcp-stateless")
		r := &replica{hp: hp, b: l.add(fmt.Sprintf("r%d", seq), strings.TrimPrefix(hp.url, "http://"))}
		testkit.Eventually(t, 15*time.Second, r.b.name+" ready in the balancer", r.b.ready.Load)
		return r
	}
	replicas := []*replica{start(), start(), start()}

	// No affinity: consecutive requests of every front end go to every
	// replica, those of one MCP session included.
	cs, err := mcpConnect(url)
	if err != nil {
		t.Fatalf("mcp connect through the balancer: %v", err)
	}
	defer cs.Close()
	for i := range 6 {
		for _, err := range []error{callAdd(url, i, 1), streamRead(url), otcAdd(url, i, 2), mcpAdd(cs, i, 3)} {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, r := range replicas {
		for _, p := range replicaPaths {
			if r.b.hitsOf(p) == 0 {
				t.Fatalf("%s got no %s request: no round robin? hits %v", r.b.name, p, r.b.hitCounts())
			}
		}
		t.Logf("%s (%s): %v", r.b.name, r.b.addr, r.b.hitCounts())
	}

	// Rolling restart under load.
	const clients = 8
	var (
		calls, failed atomic.Int64
		byPath        [4]atomic.Int64
		errMu         sync.Mutex
		errs          []string
		wg            sync.WaitGroup
	)
	stop := make(chan struct{})
	sessions := make([]*mcp.ClientSession, clients)
	for c := range sessions {
		if sessions[c], err = mcpConnect(url); err != nil {
			t.Fatalf("client %d: mcp connect: %v", c, err)
		}
		defer sessions[c].Close()
	}
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				kind := (c + n) % len(replicaPaths)
				var err error
				switch kind {
				case 0:
					err = callAdd(url, c, n)
				case 1:
					err = streamRead(url)
				case 2:
					err = otcAdd(url, c, n)
				case 3:
					err = mcpAdd(sessions[c], c, n)
				}
				calls.Add(1)
				byPath[kind].Add(1)
				if err != nil {
					failed.Add(1)
					errMu.Lock()
					if len(errs) < 10 {
						errs = append(errs, fmt.Sprintf("client %d at %v: %v", c, time.Since(testStart).Round(time.Millisecond), err))
					}
					errMu.Unlock()
				}
			}
		}()
	}
	stopClients := func() {
		select {
		case <-stop:
		default:
			close(stop)
			wg.Wait()
		}
	}
	defer stopClients()
	// underLoad waits until n more calls were made, so that every step
	// runs while calls go on.
	underLoad := func(n int64, what string) {
		target := calls.Load() + n
		testkit.Eventually(t, 15*time.Second, fmt.Sprintf("%d more calls %s (made %d, failed %d)", n, what, calls.Load(), failed.Load()), func() bool { return calls.Load() >= target })
	}

	underLoad(50, "before the rolling restart")
	rollStart := time.Now()
	var report []string
	for i := range 3 {
		old := replicas[i]
		pid := old.hp.cmd.Process.Pid
		before := calls.Load()
		sent := time.Now()
		if err := old.hp.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-old.b.out:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s (pid %d): the balancer did not take it out within 10 s of SIGTERM", old.b.name, pid)
		}
		outAfter := old.b.outAt.Sub(sent)
		select {
		case <-old.hp.done:
		case <-time.After(15 * time.Second):
			t.Fatalf("%s (pid %d): no exit within 15 s of SIGTERM", old.b.name, pid)
		}
		exited := time.Since(sent)
		// The drain delay, then calls in flight (short) and plugins: a
		// connection the balancer opened and never used must not hold
		// it (http.Server.Shutdown would wait 5 s for it).
		if exited > replicaDrainDelay+3*time.Second {
			t.Errorf("%s: exited %v after SIGTERM, want about --drain-delay %v", old.b.name, exited, replicaDrainDelay)
		}
		if code := old.hp.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("%s: exit code %d after SIGTERM", old.b.name, code)
		}
		// Readiness took it out (503 draining) before it stopped
		// listening: the balancer never had to learn it from a refused
		// connection.
		if !strings.Contains(old.b.outCause, `503 {"status":"draining"}`) {
			t.Errorf("%s: taken out by %q, want the readiness probe's 503 draining", old.b.name, old.b.outCause)
		}
		l.remove(old.b)
		replicas[i] = start()
		report = append(report, fmt.Sprintf("%s: out of the balancer %v after SIGTERM (%s), exited after %v (--drain-delay %v); %d calls meanwhile; replacement %s ready %v after SIGTERM",
			old.b.name, outAfter.Round(time.Millisecond), old.b.outCause, exited.Round(time.Millisecond), replicaDrainDelay, calls.Load()-before, replicas[i].b.name, time.Since(sent).Round(time.Millisecond)))
		underLoad(50, "after replacing "+old.b.name)
	}
	rolled := time.Since(rollStart)
	stopClients()

	for _, line := range report {
		t.Log(line)
	}
	var hits []string
	for _, r := range replicas {
		hits = append(hits, fmt.Sprintf("%s %d", r.b.name, r.b.hitsOf("")))
		if r.b.hitsOf("") == 0 {
			t.Errorf("replacement %s got no request", r.b.name)
		}
	}
	sort.Strings(hits)
	t.Logf("rolling restart of 3 replicas in %v under %d clients: %d calls (%d /opentool/call, %d /opentool/streamCall, %d /otc/call, %d /mcp tools/call), %d failed; balancer: %d connect-failure retries, %d with no ready backend; replacements' requests: %s; test %v",
		rolled.Round(time.Millisecond), clients, calls.Load(), byPath[0].Load(), byPath[1].Load(), byPath[2].Load(), byPath[3].Load(), failed.Load(), l.retried.Load(), l.noneUp.Load(), strings.Join(hits, ", "), time.Since(testStart).Round(time.Millisecond))
	if n := failed.Load(); n > 0 {
		t.Errorf("%d of %d calls failed during the rolling restart; first ones:\n%s", n, calls.Load(), strings.Join(errs, "\n"))
	}
	for _, r := range replicas {
		if !logsSay(r.hp, "serving:") {
			t.Errorf("%s: no serving line", r.b.name)
		}
	}
}

// logsSay reports whether hp's log has a line containing s.
func logsSay(hp *hostProc, s string) bool {
	sc := bufio.NewScanner(strings.NewReader(hp.logs.String()))
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			return true
		}
	}
	return false
}
