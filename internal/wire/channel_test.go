package wire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// The data channel between two real processes: the test binary re-runs
// itself as the plugin (helperEnv names the plugin's behaviour), after
// go-plugin's helperProcess.

const helperEnv = "OPENTOOL_WIRE_TEST_PLUGIN"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperPlugin(mode))
	}
	os.Exit(m.Run())
}

// helperPlugin is the plugin process. "echo" serves calls: a unary call
// answers {"echo":ARGS}; a streaming one sends ARGS.n items; function
// "fail" ends with tool error 418; "wait" waits for cancellation and
// says so with error 499; "trace" answers the trace id it got; "big"
// answers ARGS.n bytes. The other modes break the protocol on their
// first call. Every mode first writes the hello and prints "ready".
func helperPlugin(mode string) int {
	conn, err := OpenPluginChannel()
	if err != nil || conn == nil {
		fmt.Fprintln(os.Stderr, "no channel:", err)
		return 2
	}
	if mode == "silent" { // hello written; then the garbage mode's bytes
		fmt.Println("ready")
		select {}
	}
	fmt.Println("ready")
	if mode != "echo" {
		return hostilePlugin(mode, conn)
	}
	_ = ServeChannel(conn, true, func(ctx context.Context, cf *CallFrame, out CallOut) *ToolError {
		send := out.Send
		switch cf.Name {
		case "fail":
			return &ToolError{Code: 418, Message: "teapot"}
		case "wait":
			<-ctx.Done()
			return &ToolError{Code: 499, Message: "canceled"}
		case "trace":
			return errOr(send([]byte(`{"trace":"` + trace.SpanContextFromContext(ctx).TraceID().String() + `"}`)))
		case "big":
			n, _ := strconv.Atoi(string(cf.Arguments))
			b := make([]byte, n)
			copy(b, "{}")
			for i := 2; i < n; i++ {
				b[i] = ' '
			}
			return errOr(send(b))
		case "exit":
			os.Exit(3)
		case "chat": // protocol 3: meta, a notification, a request, an MCP result
			peer := out.Peer()
			if err := peer.Notify("notifications/progress", []byte(`{"progress":1}`)); err != nil {
				return errOr(err)
			}
			res, err := peer.Request(ctx, "sampling/createMessage", []byte(`{"q":1}`))
			if err != nil {
				return errOr(send([]byte(`{"request_failed":` + strconv.Quote(err.Error()) + `}`)))
			}
			return errOr(out.SendMCP([]byte(`{"content":[],"structuredContent":{"meta":` + string(peer.Meta()) + `,"answer":` + string(res) + `}}`)))
		}
		if !cf.Stream {
			return errOr(send([]byte(`{"echo":` + string(cf.Arguments) + `}`)))
		}
		n, _ := strconv.Atoi(string(cf.Arguments))
		for i := range n {
			if err := send([]byte(`{"i":` + strconv.Itoa(i) + `}`)); err != nil {
				return errOr(err)
			}
		}
		return nil
	})
	return 0
}

func errOr(err error) *ToolError {
	if err != nil {
		return &ToolError{Code: 500, Message: err.Error()}
	}
	return nil
}

// hostilePlugin reads the first call frame and answers it the way mode
// says, breaking the protocol.
func hostilePlugin(mode string, conn net.Conn) int {
	r := bufio.NewReader(conn)
	var hb [headerSize]byte
	h, err := readHeader(r, &hb)
	if err != nil {
		return 2
	}
	if _, err := r.Discard(int(h.size)); err != nil {
		return 2
	}
	w := frameWriter{conn: conn}
	switch mode {
	case "unknown-call":
		_ = w.write(FrameResult, h.id+100, nil, []byte(`{}`))
	case "flood": // items beyond the window, without waiting for credit
		for range StreamWindow + 1 {
			_ = w.write(FrameItem, h.id, nil, []byte(`{}`))
		}
	case "bad-type":
		_ = w.write(FrameCall, h.id, nil, nil)
	}
	_, _ = io.Copy(io.Discard, r)
	return 0
}

// testPlugin is a started helper plugin and the host's channel to it.
type testPlugin struct {
	cmd        *exec.Cmd
	ch         *Channel
	violations chan error
}

// startPlugin runs the test binary as plugin mode and accepts its
// channel with a receive limit of maxRecv bytes.
func startPlugin(t testing.TB, mode string, maxRecv int64) *testPlugin {
	t.Helper()
	conn, cmd := spawnPlugin(t, mode)
	p := &testPlugin{cmd: cmd, violations: make(chan error, 1)}
	ch, err := AcceptChannel(conn, maxRecv, func(err error) { p.violations <- err })
	if err != nil || ch == nil {
		t.Fatalf("AcceptChannel: %v, %v", ch, err)
	}
	ch.SetV3()
	p.ch = ch
	t.Cleanup(func() { _ = ch.Close() })
	return p
}

// spawnPlugin starts plugin mode with its end of a socket pair as
// descriptor 3 and returns the host's end once the plugin printed ready
// (as the host reads the go-plugin handshake after the hello).
func spawnPlugin(t testing.TB, mode string) (net.Conn, *exec.Cmd) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	hostFile, pluginFile := os.NewFile(uintptr(fds[0]), "host"), os.NewFile(uintptr(fds[1]), "plugin")
	conn, err := net.FileConn(hostFile)
	_ = hostFile.Close()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, DataFDEnv+"=3")
	cmd.ExtraFiles = []*os.File{pluginFile}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = pluginFile.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("plugin %s: %q, %v", mode, line, err)
	}
	return conn, cmd
}

// call runs one call to the end and returns what it received.
func call(t testing.TB, ch *Channel, ctx context.Context, name, args string, stream bool) ([]string, error) {
	t.Helper()
	fs, err := ch.invoke(ctx, Invocation{Name: name, Args: []byte(args), Stream: stream})
	if err != nil {
		return nil, err
	}
	var got []string
	for {
		b, err := fs.recv()
		if errors.Is(err, io.EOF) {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got = append(got, string(b))
	}
}

func TestChannelCalls(t *testing.T) {
	p := startPlugin(t, "echo", 1<<20)
	ctx := context.Background()
	if got, err := call(t, p.ch, ctx, "echo", `{"a":1}`, false); err != nil || len(got) != 1 || got[0] != `{"echo":{"a":1}}` {
		t.Fatalf("unary: %q, %v", got, err)
	}
	// Three times the window: the plugin waits for credit, the host grants it.
	if got, err := call(t, p.ch, ctx, "items", strconv.Itoa(3*StreamWindow), true); err != nil || len(got) != 3*StreamWindow || got[47] != `{"i":47}` {
		t.Fatalf("stream: %d items, %v", len(got), err)
	}
	var te *ToolError
	if _, err := call(t, p.ch, ctx, "fail", "", false); !errors.As(err, &te) || te.Code != 418 || te.Message != "teapot" {
		t.Fatalf("tool error: %v", err)
	}
	// Concurrent calls on one channel each get their own answer.
	errs := make(chan error, 20)
	for i := range 20 {
		go func() {
			args := fmt.Sprintf(`{"n":%d}`, i)
			got, err := call(t, p.ch, ctx, "echo", args, false)
			if err == nil && (len(got) != 1 || got[0] != `{"echo":`+args+`}`) {
				err = fmt.Errorf("call %d got %q", i, got)
			}
			errs <- err
		}()
	}
	for range 20 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// Protocol 3 on the data channel: the caller's _meta reaches the plugin;
// its notification and request come before its MCP result, in order;
// the host's reply reaches the request waiting for it.
func TestChannelMessages(t *testing.T) {
	p := startPlugin(t, "echo", 1<<20)
	fs, err := p.ch.invoke(context.Background(), Invocation{Name: "chat", Meta: []byte(`{"progressToken":7}`)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		ev, err := fs.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case ev.Message != nil && ev.Message.IsRequest():
			got = append(got, "request "+ev.Message.Method+" "+string(ev.Message.Params))
			if err := fs.Reply(Reply{ID: ev.Message.ID, Result: []byte(`{"text":"hi"}`)}); err != nil {
				t.Fatal(err)
			}
		case ev.Message != nil:
			got = append(got, "notification "+ev.Message.Method+" "+string(ev.Message.Params))
		default:
			got = append(got, fmt.Sprintf("result mcp=%v %s", ev.MCP, ev.Data))
		}
	}
	want := []string{
		`notification notifications/progress {"progress":1}`,
		`request sampling/createMessage {"q":1}`,
		`result mcp=true {"content":[],"structuredContent":{"meta":{"progressToken":7},"answer":{"text":"hi"}}}`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events:\n%q\nwant\n%q", got, want)
	}
	// An error reply reaches the request as a *RPCError.
	fs, err = p.ch.invoke(context.Background(), Invocation{Name: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := fs.Next()
		if err != nil {
			t.Fatalf("the call ended without its result: %v", err)
		}
		if ev.Message != nil && ev.Message.IsRequest() {
			_ = fs.Reply(Reply{ID: ev.Message.ID, Error: &RPCError{Code: CodeMethodNotFound, Message: "no client"}})
		}
		if ev.Data != nil {
			if string(ev.Data) != `{"request_failed":"no client (JSON-RPC error -32601)"}` {
				t.Fatalf("result after an error reply: %s", ev.Data)
			}
			break
		}
	}
}

// A call the plugin runs on its reading goroutine (the only one in
// flight) does not hold up the next call: another goroutine takes over.
func TestChannelInlineTakeover(t *testing.T) {
	p := startPlugin(t, "echo", 1<<20)
	slow, err := p.ch.invoke(context.Background(), Invocation{Name: "wait", Args: nil, Stream: false})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := call(t, p.ch, context.Background(), "echo", `{}`, false); err != nil || len(got) != 1 {
		t.Fatalf("call beside a slow one: %q, %v", got, err)
	}
	if err := slow.Cancel(); err != nil {
		t.Fatal(err)
	}
	var te *ToolError
	if _, err := slow.recv(); !errors.As(err, &te) || te.Code != 499 {
		t.Fatalf("slow call after cancel: %v, want the plugin's 499", err)
	}
}

func TestChannelCancel(t *testing.T) {
	p := startPlugin(t, "echo", 1<<20)
	fs, err := p.ch.invoke(context.Background(), Invocation{Name: "wait", Args: nil, Stream: false})
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Cancel(); err != nil {
		t.Fatal(err)
	}
	var te *ToolError
	if _, err := fs.recv(); !errors.As(err, &te) || te.Code != 499 {
		t.Fatalf("after cancel: %v, want the plugin's 499", err)
	}
}

func TestChannelTrace(t *testing.T) {
	p := startPlugin(t, "echo", 1<<20)
	tid, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	sid, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	got, err := call(t, p.ch, ctx, "trace", "", false)
	if err != nil || len(got) != 1 || got[0] != `{"trace":"0af7651916cd43dd8448eb211c80319c"}` {
		t.Fatalf("trace: %q, %v", got, err)
	}
}

// A result over the receive limit fails its call only; the channel
// keeps serving.
func TestChannelResultTooLarge(t *testing.T) {
	p := startPlugin(t, "echo", 1000)
	if _, err := call(t, p.ch, context.Background(), "big", "1001", false); !errors.Is(err, ErrResultTooLarge) {
		t.Fatalf("big result: %v, want ErrResultTooLarge", err)
	}
	if got, err := call(t, p.ch, context.Background(), "big", "1000", false); err != nil || len(got) != 1 || len(got[0]) != 1000 {
		t.Fatalf("result at the limit: %d results, %v", len(got), err)
	}
	if got, err := call(t, p.ch, context.Background(), "echo", `{}`, false); err != nil || len(got) != 1 {
		t.Fatalf("after the big result: %q, %v", got, err)
	}
}

// A plugin that exits fails its calls in flight and later ones with
// ErrChannelClosed.
func TestChannelPluginExit(t *testing.T) {
	p := startPlugin(t, "echo", 1<<20)
	if _, err := call(t, p.ch, context.Background(), "exit", "", false); !errors.Is(err, ErrChannelClosed) {
		t.Fatalf("call in flight: %v, want ErrChannelClosed", err)
	}
	if _, err := p.ch.invoke(context.Background(), Invocation{Name: "echo", Args: nil, Stream: false}); !errors.Is(err, ErrChannelClosed) {
		t.Fatalf("call after: %v, want ErrChannelClosed", err)
	}
}

// A plugin that breaks the protocol is reported once, and its calls fail
// with ErrProtocol. The flooded call is not read from until the
// violation is reported: its items pile up beyond the window.
func TestChannelViolations(t *testing.T) {
	for _, mode := range []string{"unknown-call", "flood", "bad-type"} {
		t.Run(mode, func(t *testing.T) {
			p := startPlugin(t, mode, 1<<20)
			fs, err := p.ch.invoke(context.Background(), Invocation{Name: "x", Args: nil, Stream: mode == "flood"})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case v := <-p.violations:
				if !errors.Is(v, ErrProtocol) {
					t.Fatalf("violation: %v", v)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("onViolation was not called")
			}
			for {
				_, err := fs.recv()
				if err == nil {
					continue // items that came before the violation
				}
				if !errors.Is(err, ErrProtocol) {
					t.Fatalf("call: %v, want ErrProtocol", err)
				}
				break
			}
		})
	}
}

// No hello: calls stay on gRPC (nil channel); bytes that are not the
// hello are an error.
func TestAcceptChannelHello(t *testing.T) {
	a, b := socketPair(t)
	if ch, err := AcceptChannel(a, 1<<20, nil); ch != nil || err != nil {
		t.Fatalf("no hello: %v, %v; want nil, nil", ch, err)
	}
	if _, err := b.Write([]byte("GET / HTTP/1.1\r\n\r\n...........")); err != nil {
		t.Fatal(err)
	}
	if ch, err := AcceptChannel(a, 1<<20, nil); ch != nil || !errors.Is(err, ErrProtocol) {
		t.Fatalf("garbage: %v, %v; want ErrProtocol", ch, err)
	}
}

func socketPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	var conns [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "pair")
		c, err := net.FileConn(f)
		_ = f.Close()
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
		t.Cleanup(func() { _ = c.Close() })
	}
	return conns[0], conns[1]
}

func TestCallFrameRoundTrip(t *testing.T) {
	in := &CallFrame{Stream: true, Name: "fn", Traceparent: "tp", Tracestate: "ts", Arguments: []byte(`{"a":1}`)}
	body := append(appendCallPrefix(nil, in), in.Arguments...)
	out, err := ParseCallFrame(body)
	if err != nil || out.Name != "fn" || !out.Stream || out.Traceparent != "tp" || out.Tracestate != "ts" || string(out.Arguments) != `{"a":1}` {
		t.Fatalf("%+v, %v", out, err)
	}
	for n := range len(body) - len(in.Arguments) {
		if _, err := ParseCallFrame(body[:n]); !errors.Is(err, ErrProtocol) {
			t.Fatalf("body cut at %d: %v, want ErrProtocol", n, err)
		}
	}
}

// BenchmarkChannelRoundTrip is the data channel alone: one unary call of
// 16 bytes to a plugin process and its result, sequentially.
func BenchmarkChannelRoundTrip(b *testing.B) {
	p := startPlugin(b, "echo", 1<<20)
	ctx := context.Background()
	args := []byte(`{"data":"abcde"}`)
	b.ReportAllocs()
	for b.Loop() {
		fs, err := p.ch.invoke(ctx, Invocation{Name: "echo", Args: args, Stream: false})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := fs.recv(); err != nil {
			b.Fatal(err)
		}
		if _, err := fs.recv(); err != io.EOF {
			b.Fatal(err)
		}
	}
}

// recv returns the next result or item of fs (no messages in these
// tests).
func (fs *frameStream) recv() ([]byte, error) {
	ev, err := fs.Next()
	return ev.Data, err
}

// TestEventQueue: a call's events come out in the order they went in,
// across the inline start, a grown slice and its reuse once emptied; a
// unary call's two (result, end) take no allocation; pop waits for a
// push from another goroutine.
func TestEventQueue(t *testing.T) {
	var e eventQueue
	e.init()
	ev := func(i int) frameEvent { return frameEvent{data: []byte(strconv.Itoa(i))} }
	next, want := 0, 0
	push := func(n int) {
		for range n {
			e.push(ev(next))
			next++
		}
	}
	pop := func(n int) {
		t.Helper()
		for range n {
			if got := string(e.pop().data); got != strconv.Itoa(want) {
				t.Fatalf("popped %s, want %d", got, want)
			}
			want++
		}
	}
	push(2)
	pop(1)
	push(3*StreamWindow + MessageWindow) // past the inline start
	pop(3*StreamWindow + MessageWindow + 1)
	grown := cap(e.q)
	push(StreamWindow)
	pop(StreamWindow)
	if cap(e.q) != grown || e.head != 0 {
		t.Fatalf("an emptied queue was not reused: cap %d (was %d), head %d", cap(e.q), grown, e.head)
	}

	var u eventQueue
	if n := testing.AllocsPerRun(100, func() {
		u.init()
		u.push(frameEvent{data: nil})
		u.push(frameEvent{err: io.EOF})
		u.pop()
		u.pop()
	}); n != 0 {
		t.Fatalf("a unary call's result and end took %v allocations, want 0", n)
	}

	const n = 1000
	go func() {
		for i := range n {
			e.push(ev(next + i))
		}
	}()
	pop(n)
}
