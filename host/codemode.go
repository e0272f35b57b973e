package host

// Code mode (Config.CodeMode, --code-mode): the host's own function
// run_code {"code"} runs a JavaScript program in a code runner
// (cmd/opentool-host-coderunner, one confined process per program, kept
// warm by host/codepool) and returns {"result", "console", "calls"}.
// The program calls the caller's tools synchronously as
// tools.NAME(arguments) (await works too); every such inner call comes
// back over the runner's stdin/stdout (internal/coderun) and goes
// through the one call path (Host.Call) on run_code's own context: the
// caller's key and grant (a function it may not call is "not served"
// inside as outside), its CallView, its Exchange (progress), its
// cancellation (ending run_code cancels the inner call under way and
// kills the runner) and one audit record each, linked to run_code's by
// Caller.Run. A tool's error is thrown in the program as an Error with
// the JSON-RPC error's code, message and data. A caller that asked for
// progress gets one notification per inner call completed
// (Exchange.Item: n, {"call": n, "tool", "ok"}); run_code runs as a task
// where the caller asks for one (execution.taskSupport "optional").

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/codepool"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/toolsearch"
	"github.com/opentool-host/opentool-host/internal/coderun"
	"github.com/opentool-host/opentool-host/process/sandbox"
	"github.com/opentool-host/opentool-host/protocol/jsonrpc"
)

// RunCodeName is the name of code mode's function.
const RunCodeName = "run_code"

// Code mode's fixed bounds: a program's source, its console output and
// its result's JSON, in bytes; the warm runners kept.
const (
	maxCodeBytes    = 256 << 10
	maxConsoleBytes = 64 << 10
	codePoolSize    = 2
)

// codeMode is run_code's runners and limits, made by startCode.
type codeMode struct {
	pool   *codepool.Pool
	limits coderun.Limits
}

// runCodeTool is run_code's definition; with tool search the program
// finds its tools with search_tools.
func runCodeTool(toolSearch bool) toolsearch.Tool {
	how := "The program's tools are the other tools this server lists to you, each a synchronous function tools.NAME(arguments) " +
		"(tools[\"a.b\"](...) for names that are not identifiers) returning the tool's result object; `await` works too."
	if toolSearch {
		how = "Find tools with tools.search_tools({query}) (it returns {tools: [{name, description, inputSchema}]}), then call each " +
			"as tools.NAME(arguments), a synchronous function returning the tool's result object; `await` works too."
	}
	return toolsearch.Tool{
		Name: RunCodeName,
		Description: "Run a JavaScript program (ES2020+, no modules, no file system or network) that calls tools and returns one JSON value: " +
			"the program's last expression, or what it returns. " + how + " A tool's error is thrown as an Error with code, message and data. " +
			"console.log output comes back in console. Limits: wall time, number of tool calls, result and console size; " +
			"an error says its line, column and the limit reached.",
		InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"code":{"type":"string","maxLength":%d,`+
			`"description":"the JavaScript program"}},"required":["code"],"additionalProperties":false}`, maxCodeBytes)),
	}
}

// startCode starts run_code's warm runners (Host.Start, after the
// keeper, which then tracks them). Without Config.CodeMode nothing.
func (b *builtins) startCode(h *Host) {
	if b == nil || !h.cfg.CodeMode || b.code.Load() != nil {
		return
	}
	cfg := h.cfg
	c := &codeMode{limits: coderun.Limits{
		TimeoutMs:       orDefault(cfg.CodeTimeout, core.DefaultCodeTimeout).Milliseconds(),
		MaxCalls:        orDefault(cfg.CodeMaxCalls, core.DefaultCodeMaxCalls),
		MaxOutputBytes:  int(cfg.MaxResultBytes),
		MaxConsoleBytes: maxConsoleBytes,
	}}
	mem := orDefault(cfg.CodeMemoryBytes, int64(core.DefaultCodeMemoryBytes))
	// The runner reads nothing but its own binary (added by the
	// launcher), opens no socket (seccomp), gets no new privileges, and
	// has its memory and CPU time bounded; --require-sandbox makes a
	// sandbox the kernel cannot apply in full a refusal.
	spec := sandbox.Spec{Confine: true, DenyNetwork: true, MemoryBytes: mem,
		CPUSeconds: c.limits.TimeoutMs/1000 + 5, Require: cfg.Sandbox.Require}
	log := cfg.Logger.Named("plugin").Named(RunCodeName)
	c.pool = codepool.New(codepool.Config{Program: cfg.CodeRunner, Starter: h.sv.ProgramStarter(RunCodeName, spec, log),
		Size: codePoolSize, MaxMessageBytes: int(cfg.MaxResultBytes) + maxConsoleBytes + 4096, MemoryBytes: mem, Log: log})
	b.code.Store(c)
}

// orDefault is v, or def when v is zero.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// runCode runs run_code r (its arguments validated): its program on a
// runner of its own, each inner call through h.Call on ctx, and emits
// {"result", "console", "calls"}. Errors: KindTool (code 400) for the
// program's own failure (syntax, uncaught exception, a limit), with the
// position and the console output; KindTransport when no runner runs;
// the call's context's end.
func (b *builtins) runCode(ctx context.Context, h *Host, r *request) error {
	c := b.code.Load()
	if c == nil {
		return r.Fail(core.KindStopped, "", "run_code is not running (the host has not started or is closing)", nil)
	}
	var in struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal(r.args, &in); err != nil { // validated: cannot happen
		return invalidParams(r, "", err)
	}
	outer := r.x
	inner := innerExchange(outer)
	calls := 0
	done, err := c.pool.Run(ctx, coderun.Run{Code: in.Code, Limits: c.limits}, func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, *coderun.CallError) {
		res, cerr := h.innerCall(ctx, inner, name, args)
		calls++
		if outer != nil && outer.Item != nil {
			note, _ := json.Marshal(struct {
				Call int    `json:"call"`
				Tool string `json:"tool"`
				OK   bool   `json:"ok"`
			}{calls, name, cerr == nil})
			outer.Item(calls, note)
		}
		return res, cerr
	})
	var re *codepool.RunnerError
	switch {
	case ctx.Err() != nil:
		return r.CtxError(ctx, "", "; its program's runner was killed")
	case errors.As(err, &re):
		return &core.Error{Kind: core.KindTool, Function: r.fn, Code: 400, Message: re.Message, Err: re.Err}
	case err != nil:
		return r.Fail(core.KindTransport, "", "the code runner failed", err)
	case done.Error != nil:
		msg := done.Error.Error()
		if done.Console != "" {
			msg += "\nconsole output before the error:\n" + done.Console
		}
		return &core.Error{Kind: core.KindTool, Function: r.fn, Code: 400, Message: msg}
	}
	out, err := json.Marshal(struct {
		Result  json.RawMessage `json:"result"`
		Console string          `json:"console,omitempty"`
		Calls   int             `json:"calls"`
	}{done.Value, done.Console, done.Calls})
	if err != nil { // the runner's value is not JSON
		return r.Fail(core.KindResultRejected, "", "the program's result is not JSON", err)
	}
	return r.Emit(out)
}

// innerExchange is the Exchange of the inner calls of a program whose
// run_code call has the Exchange outer (nil for none): the same Meta, requests (an inner tool's
// sampling, elicitation, roots go to run_code's caller as its own: over
// its session, in its task, or as a 2026-07-28 input_required round of
// run_code's tools/call, which holds the program where it waits) and
// notifications, but for progress: run_code's progress is one value per
// inner call completed (outer.Item, told by runCode), so that it
// increases; the inner tools' own progress, and their streamed items,
// are not the caller's.
func innerExchange(outer *core.Exchange) *core.Exchange {
	if outer == nil {
		return nil
	}
	in := *outer
	in.Item = nil
	if outer.Notify != nil {
		in.Notify = func(method string, params []byte) {
			if method != methodProgress {
				outer.Notify(method, params)
			}
		}
	}
	return &in
}

// innerCall is one tool call of a program: the caller's own call on ctx
// (run_code's context) with x (innerExchange), its result or its error as a JSON-RPC error. It
// takes one call of the caller's key's rate limit (access.Limit), as the
// front door takes one per request: over it, code 429 with data
// {"kind": "rate_limited", "retry_after_ms"}. A program does not run
// programs: run_code inside is not served.
func (h *Host) innerCall(ctx context.Context, x *core.Exchange, name string, args json.RawMessage) (json.RawMessage, *coderun.CallError) {
	if name == RunCodeName {
		return nil, &coderun.CallError{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: run_code is not served inside a program"}
	}
	if rf := access.Limit(ctx, 1); rf != nil {
		data, _ := json.Marshal(map[string]any{"kind": "rate_limited", "retry_after_ms": access.RetryAfterMs(rf.RetryAfter)})
		return nil, &coderun.CallError{Code: 429, Message: rf.Message, Data: data}
	}
	if string(args) == "null" {
		args = nil
	}
	res, err := h.call(ctx, x, name, args)
	if err == nil {
		return res, nil
	}
	return nil, callError(err)
}

// callError is err, an inner call's *Error, as the JSON-RPC error the
// program catches: -32602 with the faults, the tool's own code, -32601
// for a function not served (unknown or not the caller's), else -32603
// with data {"kind"}.
func callError(err error) *coderun.CallError {
	e := core.AsError(err)
	if e == nil {
		return &coderun.CallError{Code: jsonrpc.CodeInternalError, Message: "internal error"}
	}
	ce := &coderun.CallError{Code: jsonrpc.CodeInternalError, Message: e.Message}
	data := map[string]any{"kind": e.Kind}
	switch e.Kind {
	case core.KindInvalidParams:
		ce.Code = jsonrpc.CodeInvalidParams
		data["faults"] = e.Faults
	case core.KindTool:
		ce.Code = e.Code
	case core.KindNotFound:
		ce.Code = jsonrpc.CodeMethodNotFound
		ce.Message = fmt.Sprintf("method not found: function %q is not served%s", e.Function, e.DidYouMean())
	}
	ce.Data, _ = json.Marshal(data)
	return ce
}

// withRun marks ctx as the context of run_code's call and of its inner
// calls: Caller.Run, a fresh id, links their audit records.
func withRun(ctx context.Context) context.Context {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return core.WithCaller(ctx, core.Caller{Run: "run-" + hex.EncodeToString(b[:])})
}

// CodeRunners is the state of run_code's runners (Config.CodeMode).
type CodeRunners struct {
	// Warm are the process ids of the runners waiting for a program.
	Warm []int `json:"warm"`
	// Started is how many runner processes were started in all (one per
	// program, and the warm ones).
	Started int64 `json:"started"`
}

// CodeRunners returns the state of run_code's runners; zero without
// Config.CodeMode or before Start.
func (h *Host) CodeRunners() CodeRunners {
	if h.builtins == nil {
		return CodeRunners{}
	}
	c := h.builtins.code.Load()
	if c == nil {
		return CodeRunners{}
	}
	return CodeRunners{Warm: c.pool.Pids(), Started: c.pool.Started()}
}
