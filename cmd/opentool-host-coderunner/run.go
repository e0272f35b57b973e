package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dop251/goja"

	"github.com/opentool-host/opentool-host/internal/coderun"
)

// asyncOpen wraps a program that uses top-level return or await as the
// body of an async function; it stays on line 1, so that lines keep
// their numbers (columns of line 1 shift by its length).
const asyncOpen = "(async function(){"

// program is one run of one program in a fresh goja runtime.
type program struct {
	run0    coderun.Run
	in      *coderun.Reader
	out     io.Writer
	vm      *goja.Runtime
	calls   int
	console strings.Builder
	cut     bool
	wrapped bool
	limit   *coderun.ProgramError // the limit that interrupted the program
}

func newProgram(r coderun.Run, in *coderun.Reader, out io.Writer) *program {
	return &program{run0: r, in: in, out: out}
}

// run compiles and runs the program within its limits and returns its
// Done.
func (p *program) run() *coderun.Done {
	d := &coderun.Done{}
	val, perr := p.exec()
	d.Console, d.ConsoleTruncated, d.Calls = p.console.String(), p.cut, p.calls
	if perr != nil {
		d.Error = perr
		return d
	}
	if max := p.run0.Limits.MaxOutputBytes; max > 0 && len(val) > max {
		d.Error = &coderun.ProgramError{Kind: "limit", Limit: "max_output_bytes", Value: int64(max),
			Message: fmt.Sprintf("the program's result is %d bytes of JSON, over the limit max_output_bytes of %d bytes", len(val), max)}
		return d
	}
	d.Value = val
	return d
}

// exec runs the program and returns its value as JSON.
func (p *program) exec() (json.RawMessage, *coderun.ProgramError) {
	prog, err := goja.Compile("program.js", p.run0.Code, false)
	if err != nil {
		wrapped, werr := goja.Compile("program.js", asyncOpen+p.run0.Code+"\n})()", false)
		if werr != nil {
			return nil, p.syntaxError(err)
		}
		prog, p.wrapped = wrapped, true
	}
	p.vm = goja.New()
	p.vm.SetFieldNameMapper(goja.TagFieldNameMapper("json", true))
	if err := p.install(); err != nil {
		return nil, &coderun.ProgramError{Kind: "runtime", Message: err.Error()}
	}
	if ms := p.run0.Limits.TimeoutMs; ms > 0 {
		t := time.AfterFunc(time.Duration(ms)*time.Millisecond, func() {
			p.vm.Interrupt(&coderun.ProgramError{Kind: "limit", Limit: "timeout_ms", Value: ms,
				Message: fmt.Sprintf("the program ran out of time: the limit timeout_ms is %d ms", ms)})
		})
		defer t.Stop()
	}
	v, err := p.vm.RunProgram(prog)
	if err == nil {
		v, err = settle(v)
	}
	if err != nil {
		return nil, p.runtimeError(err)
	}
	return p.toJSON(v)
}

// settle returns the value a promise v resolved to (the job queue has
// run: every tool call is synchronous), or v itself.
func settle(v goja.Value) (goja.Value, error) {
	pr, ok := v.Export().(*goja.Promise)
	if !ok {
		return v, nil
	}
	switch pr.State() {
	case goja.PromiseStateFulfilled:
		return pr.Result(), nil
	case goja.PromiseStateRejected:
		return nil, &rejected{pr.Result()}
	}
	return nil, errors.New("the program's promise never settled (only the tools' calls can be awaited: they are synchronous)")
}

// rejected is a promise's rejection, thrown from the program.
type rejected struct{ v goja.Value }

func (r *rejected) Error() string { return "Uncaught " + r.v.String() }

// toJSON is v as JSON (JSON.stringify; undefined is null).
func (p *program) toJSON(v goja.Value) (json.RawMessage, *coderun.ProgramError) {
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return json.RawMessage("null"), nil
	}
	b, err := json.Marshal(v.Export())
	if err != nil {
		return nil, &coderun.ProgramError{Kind: "runtime", Message: "the program's value is not JSON: " + err.Error()}
	}
	return b, nil
}
