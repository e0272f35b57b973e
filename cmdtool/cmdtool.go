// Package cmdtool runs the command-line tools of a NAME.tools.json
// declaration (internal/decl.Commands) as the functions of a plugin. The
// host runs it in its adapter process ("opentool-host adapter"),
// supervised like any plugin.
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

	"github.com/opentool-host/opentool-host/internal/decl"
	"github.com/opentool-host/opentool-host/opentool"
	"github.com/opentool-host/opentool-host/pluginsdk"
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
}

var (
	_ pluginsdk.Tool       = (*Tool)(nil)
	_ pluginsdk.JSONCaller = (*Tool)(nil)
)

// New returns the Tool of declaration c for plugin name, whose file is in
// folder dir (relative programs and working directories resolve there).
func New(name, dir string, c *decl.Commands) *Tool {
	t := &Tool{name: name, cmds: map[string]*decl.Command{}, doc: c.Document(name), launch: decl.Launch{Name: name, Dir: dir}}
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
	return run(ctx, t.launch, c, argv, stdinOf(c, values))
}

// stdinOf is the value of c's stdin parameter, or "".
func stdinOf(c *decl.Command, values map[string]any) string {
	if c.Stdin == "" {
		return ""
	}
	s, _ := values[c.Stdin].(string)
	return s
}
