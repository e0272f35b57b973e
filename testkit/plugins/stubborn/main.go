// Command stubborn is a test plugin that does everything a plugin can to
// outlive its host: it clears its parent-death signal (in init, on the
// main thread, which is the thread the signal is set on), turns
// pluginsdk's parent watch off and, when its function "harden" is called,
// ignores SIGTERM (pluginsdk's guard included) and starts a child
// (sleep 600, which inherits the ignored SIGTERM) in its own process
// group. Only the host's keeper or the plugin's cgroup can take it down.
package main

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

func init() {
	// PR_SET_PDEATHSIG 0: no signal when the parent dies.
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, 0, 0)
}

type stubborn struct{}

// Load implements pluginsdk.Tool.
func (stubborn) Load(context.Context) (*opentool.OpenTool, error) {
	return &opentool.OpenTool{
		OpenTool: "1.1.0",
		Info:     opentool.Info{Title: "Stubborn", Version: "1.0.0"},
		Functions: []opentool.Function{{
			Name:        "harden",
			Description: "Ignores SIGTERM from now on, starts a child that ignores it too, and returns {\"pid\": PLUGIN, \"child\": CHILD}.",
			Parameters:  []opentool.Parameter{},
		}},
	}, nil
}

// Call implements pluginsdk.Tool.
func (stubborn) Call(_ context.Context, _ string, _ map[string]any) (map[string]any, error) {
	signal.Ignore(syscall.SIGTERM)
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = cmd.Wait() }()
	return map[string]any{"pid": os.Getpid(), "child": cmd.Process.Pid}, nil
}

func main() {
	pluginsdk.ServeWithConfig(stubborn{}, pluginsdk.ServeConfig{ParentWatchInterval: -1})
}
