package cmdtool

import (
	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/internal/decl"
	"github.com/opentool-host/opentool-host/pluginsdk"
)

// Serve serves launch's command tools as a plugin (pluginsdk.Serve) and
// never returns normally.
func Serve(l decl.Launch, log hclog.Logger) {
	t := New(l.Name, l.Dir, l.Commands)
	t.launch.Pinned, t.launch.Verified = l.Pinned, l.Verified
	pluginsdk.ServeWithConfig(t, pluginsdk.ServeConfig{Logger: log})
}
