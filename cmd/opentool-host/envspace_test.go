package main

import (
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/process/launcher"
)

// TestHostSettingsOutsidePluginNamespace (issue 30, finding 2): no flag
// of any command reads a variable of the plugins' namespace
// (launcher.PluginPrefix), so no plugin name makes a host setting its
// own; and every flag's variable is in the host's namespace
// (launcher.HostPrefix), which --plugin-env refuses.
func TestHostSettingsOutsidePluginNamespace(t *testing.T) {
	app := newApp()
	n := 0
	check := func(where string, flags []cli.Flag) {
		for _, f := range flags {
			df, ok := f.(cli.DocGenerationFlag)
			if !ok {
				continue
			}
			for _, v := range df.GetEnvVars() {
				n++
				if strings.HasPrefix(v, launcher.PluginPrefix) || !strings.HasPrefix(v, launcher.HostPrefix) {
					t.Errorf("%s --%s reads %s: a host setting must start with %s and not with %s", where, f.Names()[0], v, launcher.HostPrefix, launcher.PluginPrefix)
				}
			}
		}
	}
	check("opentool-host", app.Flags)
	var walk func(path string, cmds []*cli.Command)
	walk = func(path string, cmds []*cli.Command) {
		for _, c := range cmds {
			check(path+" "+c.Name, c.Flags)
			walk(path+" "+c.Name, c.Subcommands)
		}
	}
	walk("opentool-host", app.Commands)
	if n == 0 {
		t.Fatal("no flag reads a variable: the walk found no flags")
	}
}
