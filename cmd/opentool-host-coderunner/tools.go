package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dop251/goja"

	"github.com/opentool-host/opentool-host/internal/coderun"
)

// install gives the program its globals: tools (every property a
// synchronous function calling the host's tool of that name) and
// console (log, info, warn, error, debug: one line each into the
// bounded console output).
func (p *program) install() error {
	tools := p.vm.NewProxy(p.vm.NewObject(), &goja.ProxyTrapConfig{
		Get: func(_ *goja.Object, name string, _ goja.Value) goja.Value {
			if name == "then" { // `await tools` is tools, not a call
				return goja.Undefined()
			}
			return p.vm.ToValue(func(c goja.FunctionCall) goja.Value { return p.call(name, c.Argument(0)) })
		},
	})
	if err := p.vm.Set("tools", tools); err != nil {
		return err
	}
	console := p.vm.NewObject()
	for _, m := range []string{"log", "info", "warn", "error", "debug"} {
		if err := console.Set(m, p.log); err != nil {
			return err
		}
	}
	return p.vm.Set("console", console)
}

// log appends its arguments (strings as they are, other values as JSON)
// as one line, up to Limits.MaxConsoleBytes.
func (p *program) log(c goja.FunctionCall) goja.Value {
	parts := make([]string, len(c.Arguments))
	for i, a := range c.Arguments {
		parts[i] = p.show(a)
	}
	line := strings.Join(parts, " ") + "\n"
	limit := p.run0.Limits.MaxConsoleBytes
	if room := limit - p.console.Len(); limit > 0 && len(line) > room {
		if !p.cut {
			p.console.WriteString(line[:max(room, 0)])
			p.console.WriteString(fmt.Sprintf("\n[console output cut: the limit max_console_bytes is %d bytes]\n", limit))
		}
		p.cut = true
		return goja.Undefined()
	}
	p.console.WriteString(line)
	return goja.Undefined()
}

// show is a as console.log prints it.
func (p *program) show(a goja.Value) string {
	if s, ok := a.Export().(string); ok {
		return s
	}
	if goja.IsUndefined(a) {
		return "undefined"
	}
	b, err := json.Marshal(a.Export())
	if err != nil {
		return a.String()
	}
	return string(b)
}

// call is the inner call tools[name](arg): one Call to the host, its
// Reply's result as a JavaScript value, or its error thrown as an Error
// carrying the JSON-RPC error's code, message and data. Past
// Limits.MaxCalls the program is ended (not a catchable exception).
func (p *program) call(name string, arg goja.Value) goja.Value {
	if max := p.run0.Limits.MaxCalls; max > 0 && p.calls >= max {
		p.vm.Interrupt(&coderun.ProgramError{Kind: "limit", Limit: "max_calls", Value: int64(max),
			Message: fmt.Sprintf("the program made too many tool calls: the limit max_calls is %d", max)})
		return goja.Undefined()
	}
	p.calls++
	args := json.RawMessage("null")
	if arg != nil && !goja.IsUndefined(arg) && !goja.IsNull(arg) {
		b, err := json.Marshal(arg.Export())
		if err != nil {
			panic(p.vm.NewTypeError("tools.%s: the argument is not JSON: %v", name, err))
		}
		args = b
	}
	var reply coderun.ToRunner
	err := coderun.Write(p.out, coderun.FromRunner{Call: &coderun.Call{ID: p.calls, Name: name, Args: args}})
	if err == nil {
		err = p.in.Read(&reply)
	}
	if err == nil && (reply.Reply == nil || reply.Reply.ID != p.calls) {
		err = fmt.Errorf("the host's answer is not the reply to call %d", p.calls)
	}
	if err != nil {
		p.vm.Interrupt(&coderun.ProgramError{Kind: "runtime", Message: "the host did not answer: " + err.Error()})
		return goja.Undefined()
	}
	if e := reply.Reply.Error; e != nil {
		panic(p.toolError(name, e))
	}
	return p.parse(reply.Reply.Result)
}

// toolError is e as the Error the program catches: message
// "tools.NAME: MESSAGE", code, data (parsed JSON).
func (p *program) toolError(name string, e *coderun.CallError) *goja.Object {
	obj, err := p.vm.New(p.vm.Get("Error"), p.vm.ToValue(fmt.Sprintf("tools.%s: %s", name, e.Message)))
	if err != nil {
		panic(err)
	}
	_ = obj.Set("name", "ToolError")
	_ = obj.Set("code", e.Code)
	if len(e.Data) > 0 {
		_ = obj.Set("data", p.parse(e.Data))
	}
	return obj
}

// parse is the JSON value b as a JavaScript value (JSON.parse).
func (p *program) parse(b json.RawMessage) goja.Value {
	if len(b) == 0 {
		return goja.Null()
	}
	parse, _ := goja.AssertFunction(p.vm.Get("JSON").ToObject(p.vm).Get("parse"))
	v, err := parse(goja.Undefined(), p.vm.ToValue(string(b)))
	if err != nil {
		panic(err)
	}
	return v
}
