package mcpadapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/declared"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// goroutinesCreated is the count of goroutines this process has created
// (runtime/metrics).
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// notesHost starts a host serving examples/mcp-notes with args,
// declared shared, through declared.Serve.
func notesHost(t testing.TB, args ...string) *host.Host {
	t.Helper()
	return notesHostWith(t, nil, args...)
}

// notesHostWith is notesHost with mod applied to the host's Config.
func notesHostWith(t testing.TB, mod func(*core.Config), args ...string) *host.Host {
	t.Helper()
	dir := t.TempDir()
	argv, _ := json.Marshal(append([]string{}, args...))
	decl := `{"mcpServers":{"notes":{"command":` + strconv.Quote(testkit.Build(t, "./examples/mcp-notes")) + `,"args":` + string(argv) + `,"sessions":"shared"}}}`
	if err := os.WriteFile(filepath.Join(dir, "notes.mcp.json"), []byte(decl), 0o644); err != nil {
		t.Fatal(err)
	}
	return testkit.StartHost(t, func(c *core.Config) {
		c.Dir, c.CallTimeout, c.Declared = dir, hostBound, declared.Serve
		if mod != nil {
			mod(c)
		}
	})
}

// TestDeclaredResultBoundedByMaxResultBytes: a declared server's result
// is held to core.Config.MaxResultBytes, whether it reaches the host as
// the server wrote it (a plain result: its length) or decoded (one with
// structuredContent: its size, mcpresult.Size): one over it is
// result_rejected naming the limit, one under it is the caller's.
func TestDeclaredResultBoundedByMaxResultBytes(t *testing.T) {
	h := notesHostWith(t, func(c *core.Config) { c.MaxResultBytes = 4096 })
	big := strings.Repeat("x", 8000)
	for fn, args := range map[string]map[string]string{"repeat": {"text": big}, "add_note": {"title": "t", "body": big}} {
		b, _ := json.Marshal(args)
		_, err := h.CallResult(context.Background(), nil, fn, b)
		if e := core.AsError(err); e == nil || e.Kind != core.KindResultRejected || !strings.Contains(e.Message, "4096") {
			t.Fatalf("%s: a result of 8000 bytes under a limit of 4096: %v; want result_rejected naming the limit", fn, err)
		}
	}
	if err := callRepeat(h); err != nil {
		t.Fatal(err)
	}
	res, err := h.CallResult(context.Background(), nil, "add_note", []byte(`{"title":"t","body":"small"}`))
	if err != nil || res.Decoded == nil || res.Decoded.StructuredContent == nil {
		t.Fatalf("add_note = %+v, %v; want its result decoded, with structuredContent", res, err)
	}
}

// callRepeat calls notes' repeat through h as /mcp does
// (host.CallResult) and checks its MCP result: a plain one
// (mcpresult.Plain), as the server wrote it (Result.JSON with MCP), not
// decoded (Decoded nil).
func callRepeat(h *host.Host) error {
	res, err := h.CallResult(context.Background(), nil, "repeat", []byte(`{"text":"hi"}`))
	if err != nil || !res.MCP || res.Decoded != nil || !strings.Contains(string(res.JSON), `{"type":"text","text":"hi`) {
		return fmt.Errorf("repeat = %s, %+v (MCP %v), %v; want the server's JSON alone", res.JSON, res.Decoded, res.MCP, err)
	}
	return nil
}

// TestDeclaredCallStartsNoGoroutine: a call of a declared MCP server's
// tool through the host (host.CallResult → supervise → the adapter → the
// SDK's client → the server's stdin, and back) runs on the caller's
// goroutine: no goroutine is started for it, none for its context's end,
// none for a timer. Before, each call started two at once (the local
// call's, and the raw result sink's AfterFunc) and a third 5 s later
// (its timer).
func TestDeclaredCallStartsNoGoroutine(t *testing.T) {
	h := notesHost(t)
	for range 10 { // warm: the session, pools, the first timers
		if err := callRepeat(h); err != nil {
			t.Fatal(err)
		}
	}
	const n = 200
	before := goroutinesCreated()
	for range n {
		if err := callRepeat(h); err != nil {
			t.Fatal(err)
		}
	}
	created := goroutinesCreated() - before
	t.Logf("%d goroutines created for %d calls", created, n)
	if created > n/10 {
		t.Fatalf("%d goroutines created for %d calls of a declared server's tool; want none per call", created, n)
	}
}

// TestDeclaredServerReadWithoutHandOff: the host reads a declared command
// server's stdout on the goroutine that reads its connection (the SDK's
// JSON-RPC reader, in ioConn.Read), not on one more goroutine that reads
// the pipe and hands each message over a channel (serverOutput with
// patches/go-sdk 0005; before: one such goroutine per connection, and a
// hand-off per message the server sent).
func TestDeclaredServerReadWithoutHandOff(t *testing.T) {
	if !sdkPatched(t) {
		t.Skip("the MCP Go SDK as released reads stdio on a goroutine of its own (patches/go-sdk 0005)")
	}
	h := notesHost(t)
	if err := callRepeat(h); err != nil {
		t.Fatal(err)
	}
	// The connection's reader goes back to reading the pipe once the
	// answer is handed on: wait for it there.
	deadline := time.Now().Add(10 * time.Second)
	for {
		inRead, elsewhere := pipeReaders()
		if elsewhere != "" {
			t.Fatalf("a goroutine reads the server's stdout outside the connection's Read:\n%s", elsewhere)
		}
		if inRead {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no goroutine reads the server's stdout in the connection's Read after 10s")
		}
		runtime.Gosched()
	}
}

// pipeReaders looks at every goroutine reading a file inside the SDK's
// mcp package: whether one does so within ioConn.Read, and the stack of
// one that does so elsewhere ("" when none).
func pipeReaders() (inRead bool, elsewhere string) {
	buf := make([]byte, 4<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if !strings.Contains(g, "os.(*File).Read") || !strings.Contains(g, "go-sdk/mcp.") {
			continue
		}
		if !strings.Contains(g, "mcp.(*ioConn).Read") {
			return inRead, g
		}
		inRead = true
	}
	return inRead, ""
}

// sdkPatched reports whether this binary's MCP Go SDK reads an
// IOTransport whose reader has a read deadline on the goroutine of the
// connection's Read (patches/go-sdk 0005): it connects one over a pipe
// and looks where its first read of the pipe runs.
func sdkPatched(t *testing.T) bool {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	defer r.Close()
	pr := &probeReader{File: r, first: make(chan bool, 1)}
	conn, err := (&mcp.IOTransport{Reader: pr, Writer: w}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go conn.Read(context.Background()) // ends with conn.Close
	return <-pr.first
}

// probeReader is a pipe's read end that says on first whether its first
// Read ran within the SDK's ioConn.Read.
type probeReader struct {
	*os.File
	once  sync.Once
	first chan bool
}

func (p *probeReader) Read(b []byte) (int, error) {
	p.once.Do(func() {
		stack := make([]byte, 64<<10)
		p.first <- strings.Contains(string(stack[:runtime.Stack(stack, false)]), "mcp.(*ioConn).Read")
	})
	return p.File.Read(b)
}

func (p *probeReader) Close() error { return nil }

// BenchmarkDeclaredCall measures a call of a declared MCP server's tool
// through the host in process, without HTTP (host.CallResult: the call
// path, supervise, the adapter, the SDK's client, the server's stdio and
// back), one caller at a time and 64 at once; cpu-µs/op is this
// process's CPU (user+system) per call, the server's left out.
func BenchmarkDeclaredCall(b *testing.B) {
	h := notesHost(b)
	for _, callers := range []int{1, 64} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			if err := callRepeat(h); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			if callers == 1 {
				for range b.N {
					if err := callRepeat(h); err != nil {
						b.Fatal(err)
					}
				}
			} else {
				b.SetParallelism(callers / runtime.GOMAXPROCS(0))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := callRepeat(h); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			b.StopTimer()
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// processCPU is the CPU time (user+system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
