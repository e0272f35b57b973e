package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The load generator runs the HTTP clients of a benchmark in a process of
// their own, as real clients are: the server under test then pays for
// its side of loopback HTTP only, its allocations and CPU are its own,
// and the client's goroutines do not share its scheduler. The benchmark
// process starts it once (StartLoadgen) and sends it one LoadRequest per
// run over stdin; it answers each with a LoadResult on stdout.

// LoadRequest asks the load generator for one run.
type LoadRequest struct {
	// URL is where to POST Body.
	URL string `json:"url"`
	// Body is the request body.
	Body []byte `json:"body"`
	// Clients is the number of concurrent keep-alive clients; their
	// connections are kept from one run to the next of the same URL and
	// Clients.
	Clients int `json:"clients"`
	// N is the number of calls, shared by the clients. With Warm, each
	// client makes exactly one call instead (N is ignored).
	N    int  `json:"n"`
	Warm bool `json:"warm,omitempty"`
	// EchoParams, when set, is checked with CheckEcho against each
	// response; else each response must be {"echo":BODY}.
	EchoParams []byte `json:"echo_params,omitempty"`
	// Contains, when set, must be in each response instead (a call
	// whose answer is not an echo). With MCP it is required (over stdio:
	// the text of the result's first content block, "" for any).
	Contains string `json:"contains,omitempty"`
	// MCP, when set, makes Body an MCP tools/call (mcp.go).
	MCP *MCPLoad `json:"mcp,omitempty"`
	// Authorization, when set, is the Authorization header of every
	// request of the run (HTTP and MCP, MCPLoad.SDK included), e.g.
	// "Bearer KEY" or "Bearer JWT". Runs of one URL and Clients with two
	// values keep connections and MCP sessions apart (a session belongs
	// to its caller).
	Authorization string `json:"authorization,omitempty"`
	// Close, when set, makes the request no run: the load generator
	// ends the MCP sessions (MCPLoad.SDK) and drops the connections and
	// session ids it keeps for URL, whatever their Clients, and answers
	// an empty LoadResult.
	Close bool `json:"close,omitempty"`
}

// LoadResult is the outcome of one run.
type LoadResult struct {
	// Elapsed is the wall time of the run.
	Elapsed time.Duration `json:"elapsed"`
	// P50 and P99 are call latency percentiles.
	P50 time.Duration `json:"p50"`
	P99 time.Duration `json:"p99"`
	// CPU is the load generator's own CPU time during the run.
	CPU time.Duration `json:"cpu"`
	// Err is the first failure that stopped a client ("" when none did).
	Err string `json:"err,omitempty"`
	// Calls is the number of calls made, failed ones included.
	Calls int `json:"calls"`
	// Failed is the number of calls that failed and were counted
	// (CountedFailure) rather than stopping their client; Failure is the
	// first one's message. P50 and P99 are of the other calls.
	Failed  int    `json:"failed,omitempty"`
	Failure string `json:"failure,omitempty"`
}

// CountedFailure is an error of RunLocal's op that fails one call
// without stopping its client: RunLocal counts it (LoadResult.Failed)
// and goes on with the client's next call.
type CountedFailure struct{ Err error }

// Error implements error.
func (f *CountedFailure) Error() string { return f.Err.Error() }

// Unwrap returns the call's error.
func (f *CountedFailure) Unwrap() error { return f.Err }

// ServeLoadgen answers LoadRequests read from r (JSON lines) with
// LoadResults written to w until r ends. It returns the exit code.
func ServeLoadgen(r io.Reader, w io.Writer) int {
	dec := json.NewDecoder(bufio.NewReader(r))
	enc := json.NewEncoder(w)
	clients := map[string]*http.Client{}
	sessions := map[string][]string{} // MCP session ids of each client
	sdk := map[string]*sdkClients{}   // Go SDK sessions of each client (MCPLoad.SDK)
	defer closeStdio()
	defer closeSDK(sdk, "")
	for {
		var req LoadRequest
		if err := dec.Decode(&req); err != nil {
			if err == io.EOF {
				return 0
			}
			fmt.Fprintln(os.Stderr, "loadgen:", err)
			return 1
		}
		key := fmt.Sprintf("%s|%d|%s", req.URL, req.Clients, req.Authorization)
		if req.Close {
			closeSDK(sdk, req.URL)
			for k, c := range clients {
				if strings.HasPrefix(k, req.URL+"|") {
					c.CloseIdleConnections()
					delete(clients, k)
					delete(sessions, k)
				}
			}
			if err := enc.Encode(LoadResult{}); err != nil {
				return 1
			}
			continue
		}
		c := clients[key]
		if c == nil {
			c = WithAuthorization(NewHTTPClient(req.Clients, 30*time.Second), req.Authorization)
			clients[key] = c
		}
		var res LoadResult
		switch {
		case req.MCP != nil && len(req.MCP.Stdio) > 0:
			res = runMCPStdio(&req)
		case req.MCP != nil && req.MCP.SDK:
			if sdk[key] == nil {
				sdk[key] = newSDKClients(req.URL, req.Clients, req.Authorization)
			}
			res = runMCPSDK(sdk[key], &req)
		case req.MCP != nil:
			if sessions[key] == nil {
				sessions[key] = make([]string, req.Clients)
			}
			res = runMCPHTTP(c, &req, sessions[key])
		default:
			res = runLoad(c, &req)
		}
		if err := enc.Encode(res); err != nil {
			return 1
		}
	}
}

func runLoad(c *http.Client, req *LoadRequest) LoadResult {
	ctx := context.Background()
	bufs := make([]bytes.Buffer, req.Clients)
	return RunLocal(req.Clients, req.N, req.Warm, func(w int) error {
		st, resp, err := Post(ctx, c, req.URL, req.Body, &bufs[w])
		switch {
		case err != nil:
			return err
		case st != http.StatusOK:
			return fmt.Errorf("HTTP %d: %.200s", st, resp)
		case req.EchoParams != nil:
			return CheckEcho(resp, req.EchoParams)
		case req.Contains != "":
			if !bytes.Contains(resp, []byte(req.Contains)) {
				return fmt.Errorf("response %.200s does not contain %q", resp, req.Contains)
			}
		case len(resp) != len(req.Body)+9:
			return fmt.Errorf("floor: %d bytes, want %d", len(resp), len(req.Body)+9)
		}
		return nil
	})
}

// RunLocal runs n calls of op shared by clients goroutines (op's argument
// is the goroutine's index), or with warm exactly one call per goroutine,
// and measures them. An error of op stops its goroutine, the first is
// reported in Err; a CountedFailure does not, it is counted in Failed.
func RunLocal(clients, n int, warm bool, op func(worker int) error) LoadResult {
	type worker struct {
		lats    []time.Duration
		calls   int
		failed  int
		failure error // the first CountedFailure
		err     error
	}
	ws := make([]*worker, clients)
	for i := range ws {
		ws[i] = &worker{lats: make([]time.Duration, 0, n/clients+2)}
	}
	cpu0 := SelfCPUTime()
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if warm {
					if w.calls == 1 {
						return
					}
				} else if next.Add(1) > int64(n) {
					return
				}
				t0 := time.Now()
				err := op(i)
				w.calls++
				var cf *CountedFailure
				switch {
				case errors.As(err, &cf):
					w.failed++
					if w.failure == nil {
						w.failure = cf.Err
					}
					continue
				case err != nil:
					w.err = err
					return
				}
				w.lats = append(w.lats, time.Since(t0))
			}
		}()
	}
	wg.Wait()
	res := LoadResult{Elapsed: time.Since(start), CPU: SelfCPUTime() - cpu0}
	var lats []time.Duration
	for _, w := range ws {
		if w.err != nil && res.Err == "" {
			res.Err = w.err.Error()
		}
		if w.failure != nil && res.Failure == "" {
			res.Failure = w.failure.Error()
		}
		res.Calls += w.calls
		res.Failed += w.failed
		lats = append(lats, w.lats...)
	}
	SortDurations(lats)
	res.P50, res.P99 = Percentile(lats, 50), Percentile(lats, 99)
	return res
}

// Loadgen is a running load generator process.
type Loadgen struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	enc *json.Encoder
	dec *json.Decoder
	mu  sync.Mutex
}

// StartLoadgen starts exe with args and env (which must make it call
// ServeLoadgen on its stdin and stdout).
func StartLoadgen(exe string, args, env []string) (*Loadgen, error) {
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &Loadgen{cmd: cmd, in: in, enc: json.NewEncoder(in), dec: json.NewDecoder(out)}, nil
}

// Run performs one run and returns its result; a failed call is an error.
func (l *Loadgen) Run(req LoadRequest) (LoadResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.enc.Encode(&req); err != nil {
		return LoadResult{}, fmt.Errorf("loadgen: %w", err)
	}
	var res LoadResult
	if err := l.dec.Decode(&res); err != nil {
		return LoadResult{}, fmt.Errorf("loadgen: %w", err)
	}
	if res.Err != "" {
		return res, fmt.Errorf("loadgen: %s", res.Err)
	}
	return res, nil
}

// PID is the load generator's process id.
func (l *Loadgen) PID() int { return l.cmd.Process.Pid }

// Close ends the load generator and waits for it.
func (l *Loadgen) Close() error {
	l.in.Close()
	return l.cmd.Wait()
}
