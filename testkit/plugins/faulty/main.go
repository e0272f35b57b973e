// Command faulty is a test plugin whose functions misbehave on purpose.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// rawStderr is the process's fd 2: go-plugin redirects os.Stderr to its
// stdio stream during Serve, which may not flush before os.Exit.
var rawStderr = os.Stderr

// version is set by tests with -ldflags to make distinct binaries.
var version = "1"

type faulty struct{}

// active counts sleeps in flight; cancelled those ended by cancellation.
var active, cancelled atomic.Int64

func fn(name, desc string, params ...opentool.Parameter) opentool.Function {
	if params == nil {
		params = []opentool.Parameter{}
	}
	return opentool.Function{Name: name, Description: desc, Parameters: params}
}

func streamFn(name, desc string) opentool.Function {
	f := fn(name, desc)
	f.Stream = &opentool.Stream{Data: &opentool.Return{Name: "tick", Schema: &opentool.Schema{Type: opentool.TypeObject, Properties: map[string]*opentool.Schema{"n": {Type: opentool.TypeInteger}}}}}
	return f
}

// StreamCall implements pluginsdk.Streamer.
func (faulty) StreamCall(ctx context.Context, name string, _ map[string]any, send func(map[string]any) error) error {
	if err := send(map[string]any{"n": 0}); err != nil {
		return err
	}
	switch name {
	case "stuckStream":
		select {}
	case "ticks":
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				cancelled.Add(1)
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
			if err := send(map[string]any{"n": n}); err != nil {
				return err
			}
		}
	}
	return pluginsdk.FunctionNotFound(name)
}

// echoDescription is echo's description: OPENTOOL_FAULTY_ECHO_DESCRIPTION
// when set (tests change a definition without changing the binary).
func echoDescription() string {
	if d := os.Getenv("OPENTOOL_FAULTY_ECHO_DESCRIPTION"); d != "" {
		return d
	}
	return "Returns its arguments."
}

// Load implements pluginsdk.Tool: it returns the plugin's document.
func (faulty) Load(context.Context) (*opentool.OpenTool, error) {
	ms := opentool.Parameter{Name: "ms", Schema: &opentool.Schema{Type: opentool.TypeInteger}, Required: false}
	return &opentool.OpenTool{
		OpenTool: "1.1.0",
		Info:     opentool.Info{Title: "Faulty", Version: version},
		Functions: []opentool.Function{
			fn("panic", "Crashes the process with a panic in a goroutine."),
			fn("exit", "Exits the process with status 3."),
			fn("hang", "Blocks forever, ignoring cancellation."),
			fn("sleep", "Sleeps ms milliseconds, honouring cancellation.", ms),
			fn("spin", "Keeps one core busy for ms milliseconds of wall-clock time, then returns the CPU seconds the process used.", ms),
			fn("pid", "Returns the process id and the binary version."),
			fn("spawn", "Starts a child process (sleep 600) and returns its pid."),
			fn("alloc", "Allocates and touches mb MiB, then returns.", opentool.Parameter{Name: "mb", Schema: &opentool.Schema{Type: opentool.TypeInteger}, Required: true}),
			fn("spawnSetsid", "Starts a child process (sleep 600) in a session of its own (setsid: out of the plugin's process group) and returns its pid."),
			fn("echo", echoDescription(), opentool.Parameter{Name: "x", Schema: &opentool.Schema{Type: opentool.TypeString}}),
			fn("sleeps", "Returns the sleeps in flight (active) and those ended by cancellation (cancelled)."),
			fn("env", "Returns the process environment as {\"env\": {NAME: VALUE}}."),
			fn("trace", "Returns the trace id and span id the call's context carries (the host's execute_tool span)."),
			streamFn("ticks", "Streams one item, then one every 10 ms until cancelled."),
			streamFn("stuckStream", "Streams one item, then blocks forever, ignoring cancellation."),
		},
	}, nil
}

// Call implements pluginsdk.Tool.
func (faulty) Call(ctx context.Context, name string, args map[string]any) (map[string]any, error) {
	switch name {
	case "panic":
		fmt.Fprintln(rawStderr, "faulty: about to panic")
		done := make(chan struct{})
		go func() { panic("faulty plugin panics on purpose") }()
		<-done
	case "exit":
		fmt.Fprintln(rawStderr, "faulty: exiting with status 3")
		os.Exit(3)
	case "hang":
		select {}
	case "spin":
		ms, _ := args["ms"].(float64)
		for end := time.Now().Add(time.Duration(ms) * time.Millisecond); time.Now().Before(end); {
		}
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		return map[string]any{"cpu_seconds": cpu.Seconds()}, nil
	case "sleep":
		ms, _ := args["ms"].(float64)
		active.Add(1)
		defer active.Add(-1)
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
			return map[string]any{"slept_ms": ms}, nil
		case <-ctx.Done():
			cancelled.Add(1)
			return nil, ctx.Err()
		}
	case "sleeps":
		return map[string]any{"active": active.Load(), "cancelled": cancelled.Load()}, nil
	case "pid":
		return map[string]any{"pid": os.Getpid(), "version": version}, nil
	case "alloc":
		mb, _ := args["mb"].(float64)
		b := make([]byte, int(mb)<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		return map[string]any{"allocated_mb": mb}, nil
	case "spawnSetsid":
		cmd := exec.Command("sleep", "600")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		go func() { _ = cmd.Wait() }()
		return map[string]any{"pid": cmd.Process.Pid}, nil
	case "spawn":
		cmd := exec.Command("sleep", "600")
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		go func() { _ = cmd.Wait() }()
		return map[string]any{"pid": cmd.Process.Pid}, nil
	case "trace":
		sc := trace.SpanContextFromContext(ctx)
		return map[string]any{"trace_id": sc.TraceID().String(), "span_id": sc.SpanID().String(), "remote": sc.IsRemote()}, nil
	case "env":
		env := map[string]any{}
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		return map[string]any{"env": env}, nil
	case "echo":
		b, _ := json.Marshal(args)
		var out map[string]any
		_ = json.Unmarshal(b, &out)
		return out, nil
	}
	return nil, pluginsdk.FunctionNotFound(name)
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "version" {
		fmt.Println(version, strconv.Itoa(os.Getpid()))
		return
	}
	pluginsdk.Serve(faulty{})
}
