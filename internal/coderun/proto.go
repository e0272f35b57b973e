// Package coderun is the protocol between the host and its code runner
// (cmd/opentool-host-coderunner), the confined process that runs one
// run_code program (host/codemode.go): one JSON object per line, the
// host's messages (ToRunner) on the runner's stdin, the runner's
// (FromRunner) on its stdout. The host sends one Run; the runner answers
// with any number of Calls, each answered by one Reply before the next,
// then one Done, and exits. One program per process: nothing of one
// program reaches another's.
package coderun

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/opentool-host/opentool-host/internal/rpcerr"
)

// Limits bound one program. Every limit reached ends the program with a
// ProgramError of Kind "limit" naming the limit and its value.
type Limits struct {
	// TimeoutMs is the program's wall time, in milliseconds (goja's
	// Interrupt in the runner; the host kills the runner a grace later).
	TimeoutMs int64 `json:"timeout_ms"`
	// MaxCalls is the number of inner tool calls the program may make.
	MaxCalls int `json:"max_calls"`
	// MaxOutputBytes bounds the program's result, as JSON, in bytes.
	MaxOutputBytes int `json:"max_output_bytes"`
	// MaxConsoleBytes bounds what console.log keeps, in bytes; beyond it
	// the output is cut and Done.ConsoleTruncated set (the program goes on).
	MaxConsoleBytes int `json:"max_console_bytes"`
}

// ToRunner is one message from the host: exactly one member is set.
type ToRunner struct {
	Run   *Run   `json:"run,omitempty"`
	Reply *Reply `json:"reply,omitempty"`
}

// Run is the program to run (JavaScript source) and its limits.
type Run struct {
	Code   string `json:"code"`
	Limits Limits `json:"limits"`
}

// Reply answers the inner Call of the same ID: its result (a JSON value)
// or its error.
type Reply struct {
	ID     int             `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *CallError      `json:"error,omitempty"`
}

// CallError is an inner call's failure as a JSON-RPC 2.0 error object
// (section 5.1): code, message, data; the one the plugins' protocol
// carries too (rpcerr.Error, internal/wire's RPCError). The program sees
// it as a thrown Error with these members.
type CallError = rpcerr.Error

// FromRunner is one message from the runner: exactly one member is set.
// Its first is Ready, once it runs confined (after the sandbox launcher
// exec'd it), before it reads the Run.
type FromRunner struct {
	Ready bool  `json:"ready,omitempty"`
	Call  *Call `json:"call,omitempty"`
	Done  *Done `json:"done,omitempty"`
}

// Call is the program's inner tool call: tools[Name](Args); Args is the
// JSON of its argument (an object, or null for none).
type Call struct {
	ID   int             `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Done ends the program: its value as JSON (null for undefined) or its
// Error, and what console.log wrote.
type Done struct {
	Value            json.RawMessage `json:"value,omitempty"`
	Error            *ProgramError   `json:"error,omitempty"`
	Console          string          `json:"console,omitempty"`
	ConsoleTruncated bool            `json:"console_truncated,omitempty"`
	Calls            int             `json:"calls"`
}

// ProgramError is why a program failed, for a model to fix it.
type ProgramError struct {
	// Kind is "syntax", "runtime" (an uncaught exception) or "limit".
	Kind    string `json:"kind"`
	Message string `json:"message"`
	// Line and Column are 1-based positions in the program (0: unknown);
	// Source is the program's text of that line.
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
	Source string `json:"source,omitempty"`
	// Limit names the limit reached (Kind "limit"): "timeout_ms",
	// "max_calls", "max_output_bytes"; Value is its value.
	Limit string `json:"limit,omitempty"`
	Value int64  `json:"value,omitempty"`
}

// Error is the message with its position: "runtime error at line 3,
// column 7: ReferenceError: x is not defined\n    3 | return x".
func (e *ProgramError) Error() string {
	s := e.Kind + " error"
	if e.Line > 0 {
		s += fmt.Sprintf(" at line %d, column %d", e.Line, e.Column)
	}
	s += ": " + e.Message
	if e.Source != "" {
		s += fmt.Sprintf("\n    %d | %s", e.Line, e.Source)
	}
	return s
}

// Reader reads one message per line, each at most max bytes.
type Reader struct{ s *bufio.Scanner }

// NewReader reads messages from r, each line at most max bytes.
func NewReader(r io.Reader, max int) *Reader {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 64<<10), max)
	return &Reader{s: s}
}

// Read decodes the next line into v. Errors: io.EOF at the end, a line
// over the bound (bufio.ErrTooLong), bad JSON.
func (r *Reader) Read(v any) error {
	if !r.s.Scan() {
		if err := r.s.Err(); err != nil {
			return err
		}
		return io.EOF
	}
	return json.Unmarshal(r.s.Bytes(), v)
}

// Write writes v as one line to w (json.Encoder ends it with "\n").
func Write(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }
