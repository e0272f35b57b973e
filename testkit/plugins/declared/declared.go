// Package declared is a stand-in for declared.Serve in host tests
// (core.Config.Declared): it serves the decl.Launch the host hands it as
// function "launch_NAME" (NAME the server's name), and a document that
// changes while it runs: "grow_NAME" {"name"} adds a function "NAME"
// (returning {"grown": NAME}) and reports the change over the Watch
// stream (pluginsdk.DocumentWatcher); "bad_NAME" makes the next Load
// return an invalid document.
package declared

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

type declared struct {
	launch decl.Launch
	env    []string // the plugin's environment (launcher.Starter.Env)
	// instance counts the stand-ins Serve made: a new one is a restart.
	instance int64
	changed  chan struct{}

	mu    sync.Mutex
	grown []string
	bad   bool
}

var (
	_ pluginsdk.Tool            = (*declared)(nil)
	_ pluginsdk.DocumentWatcher = (*declared)(nil)
)

// Load implements pluginsdk.Tool.
func (d *declared) Load(context.Context) (*opentool.OpenTool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.launch.Name
	str := &opentool.Schema{Type: opentool.TypeString}
	doc := &opentool.OpenTool{
		OpenTool: "1.1.0",
		Info:     opentool.Info{Title: "declared " + n, Version: "1.0.0"},
		Functions: []opentool.Function{
			{Name: "launch_" + n, Description: "Returns the launch the host handed over."},
			{Name: "grow_" + n, Description: "Adds function NAME.", Parameters: []opentool.Parameter{{Name: "name", Schema: str, Required: true}}},
			{Name: "bad_" + n, Description: "Makes the next document invalid."},
		},
	}
	for _, g := range d.grown {
		doc.Functions = append(doc.Functions, opentool.Function{Name: g, Description: "Grown."})
	}
	if d.bad {
		doc.Functions = append(doc.Functions, opentool.Function{Name: "not a valid name!"})
	}
	return doc, nil
}

// DocumentChanged implements pluginsdk.DocumentWatcher.
func (d *declared) DocumentChanged() <-chan struct{} { return d.changed }

// Call implements pluginsdk.Tool.
func (d *declared) Call(_ context.Context, name string, args map[string]any) (map[string]any, error) {
	n := d.launch.Name
	switch name {
	case "launch_" + n:
		return map[string]any{"name": n, "dir": d.launch.Dir, "command": d.launch.Server.Command, "args": d.launch.Server.Args, "url": d.launch.Server.URL, "env": d.launch.Server.Env, "transport": d.launch.Server.Transport, "env_var_set": len(d.env) > 0, "instance": d.instance}, nil
	case "grow_" + n:
		g, _ := args["name"].(string)
		d.mu.Lock()
		if !slices.Contains(d.grown, g) {
			d.grown = append(d.grown, g)
		}
		d.mu.Unlock()
		d.signal()
		return map[string]any{"grown": g}, nil
	case "bad_" + n:
		d.mu.Lock()
		d.bad = true
		d.mu.Unlock()
		d.signal()
		return map[string]any{}, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if slices.Contains(d.grown, name) {
		return map[string]any{"grown": name}, nil
	}
	return nil, pluginsdk.FunctionNotFound(name)
}

// signal reports a change without blocking.
func (d *declared) signal() {
	select {
	case d.changed <- struct{}{}:
	default:
	}
}

// served counts the calls of Serve.
var served atomic.Int64

// Serve is a core.Config.Declared: the stand-in for launch l.
func Serve(l decl.Launch, s *launcher.Starter, _ hclog.Logger) wire.Local {
	return pluginsdk.Local(&declared{launch: l, env: s.Env, instance: served.Add(1), changed: make(chan struct{}, 1)})
}
