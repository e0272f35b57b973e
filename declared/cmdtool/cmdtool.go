// Package cmdtool runs the command-line tools of a NAME.tools.json
// declaration (protocol/decl.Commands) as the functions of a plugin. The
// host serves it in its own process (its document through
// pluginsdk.Local, its calls as a supervise.Direct: a function call on
// the caller's goroutine): no process runs between a call and its
// command, which the host starts per call as it starts a plugin
// (launcher.Starter: environment, sandbox, user, cgroup).
//
// One call: the host has validated the arguments against the declared
// parameters → Tool.CallJSON builds the argv from the template (argv.go;
// never a shell: every value is one argument, whatever it holds) → the
// program runs in its own process group with the declared timeout, a
// parent-death signal, an environment allow-list and capped output
// (run.go) → stdout becomes the result ("text" or "json").
package cmdtool

import (
	"context"
	"encoding/json"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// Tool serves the functions of one command-tools declaration.
type Tool struct {
	name string
	cmds map[string]*decl.Command
	doc  *opentool.OpenTool
	// launch holds the declaration's folder and, under a lock, the pinned
	// files and their verified copies (decl.Launch.Pinned, Verified):
	// every run's command line is made by launch.Exec.
	launch decl.Launch
	// starter starts each command (never nil).
	starter *launcher.Starter
}

var (
	_ pluginsdk.Tool       = (*Tool)(nil)
	_ pluginsdk.JSONCaller = (*Tool)(nil)
	_ supervise.Direct     = (*Tool)(nil)
)

// CallDirect implements supervise.Direct: CallJSON, called by the host
// itself on the caller's goroutine (x is not used: a command takes no
// messages). A call's end kills its command (run.go), so it returns soon
// after ctx ends. Errors: CallJSON's, as a *wire.ToolError.
func (t *Tool) CallDirect(ctx context.Context, _ *core.Exchange, name string, args []byte) (supervise.DirectResult, error) {
	out, err := t.CallJSON(ctx, name, args)
	if err != nil {
		return supervise.DirectResult{}, pluginsdk.WireError(err)
	}
	if len(out) == 0 {
		out = []byte("{}")
	}
	return supervise.DirectResult{Object: out}, nil
}

// RequestDirect implements supervise.Direct: command tools serve no MCP
// catalog. Errors: always a -32601 *wire.RPCError naming method.
func (t *Tool) RequestDirect(_ context.Context, _ *core.Exchange, method string, _ []byte) ([]byte, error) {
	return nil, &wire.RPCError{Code: wire.CodeMethodNotFound, Message: method + ": the plugin serves no MCP catalog"}
}

// New returns the Tool of launch l (l.Commands, with l.Dir the
// declaration's folder, where relative programs and working directories
// resolve, and under a lock l.Pinned and l.Verified), whose commands s
// starts (nil: as they are, with an empty environment).
func New(l decl.Launch, s *launcher.Starter) *Tool {
	if s == nil {
		s = &launcher.Starter{}
	}
	c := l.Commands
	t := &Tool{name: l.Name, cmds: map[string]*decl.Command{}, doc: c.Document(l.Name), launch: l, starter: s}
	for i := range c.Functions {
		t.cmds[c.Functions[i].Name] = &c.Functions[i]
	}
	return t
}

// Load implements pluginsdk.Tool: the declaration as an OpenTool 1.1.0
// document.
func (t *Tool) Load(context.Context) (*opentool.OpenTool, error) { return t.doc, nil }

// Call implements pluginsdk.Tool by way of CallJSON.
func (t *Tool) Call(ctx context.Context, name string, args map[string]any) (map[string]any, error) {
	b, err := json.Marshal(args)
	if err != nil {
		return nil, pluginsdk.InvalidArguments("arguments: %v", err)
	}
	out, err := t.CallJSON(ctx, name, b)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(out, &m)
}

// CallJSON implements pluginsdk.JSONCaller: it runs function name's
// command. Errors (pluginsdk codes): 404 unknown function; 400 arguments
// that are not a JSON object; 500 the program could not start, exited
// non-zero (with the end of its stderr), timed out, wrote more than its
// output cap, or (output "json") did not print one JSON object.
func (t *Tool) CallJSON(ctx context.Context, name string, args []byte) ([]byte, error) {
	c, ok := t.cmds[name]
	if !ok {
		return nil, pluginsdk.FunctionNotFound(name)
	}
	var values map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &values); err != nil {
			return nil, pluginsdk.InvalidArguments("arguments must be a JSON object: %v", err)
		}
	}
	argv, err := buildArgv(c.Argv, values)
	if err != nil {
		return nil, pluginsdk.InvalidArguments("%v", err)
	}
	return run(ctx, t.launch, t.starter, c, argv, stdinOf(c, values))
}

// stdinOf is the value of c's stdin parameter, or "".
func stdinOf(c *decl.Command, values map[string]any) string {
	if c.Stdin == "" {
		return ""
	}
	s, _ := values[c.Stdin].(string)
	return s
}
