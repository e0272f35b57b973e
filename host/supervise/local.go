package supervise

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync/atomic"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/discover"
	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/process/cgroup"
	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/process/sandbox"
	"github.com/opentool-host/opentool-host/protocol/decl"
)

// A declared plugin (a NAME.mcp.json server, NAME.tools.json commands)
// is served in the host's own process (Config.Declared): the host is the
// MCP client of the server, and starts the server, or each command, as
// it starts a plugin process, through the plugin's launcher.Starter
// (starter): the plugin's environment allow-list with its policy's
// variables and secrets, the sandbox launcher in front when its policy
// needs it, the plugin user, a cgroup, the keeper. Nothing runs between
// the host and the program. The instance's "process" is then the served
// plugin: it has exited when its Run returned (the server exited, its
// session broke), and stop and kill end it.

// localPlugin is the running side of a declared plugin's instance.
type localPlugin struct {
	plugin wire.Local
	// stopRun ends Run gracefully (a stdio server's stdin closed, then
	// SIGTERM, then SIGKILL).
	stopRun context.CancelFunc
	// ended is closed once Run returned; status is then why.
	ended  chan struct{}
	status atomic.Pointer[string]
	// done ends with stop and kill (endCalls): the calls still in
	// flight end.
	done     context.Context
	endCalls context.CancelFunc
	// calls are the Direct calls in flight (directCall), ended with
	// done.
	calls directCalls
	// group is the cgroup shared by the commands of command tools, nil
	// for a server (each server process gets its own) or without cgroups.
	group *cgroup.Group
}

// startLocal serves declared plugin f in the host's process as inst,
// from the launch prepared for it (proc), and starts its Run. Errors:
// no Config.Declared, a launch that does not decode, a cgroup that
// cannot be made.
func startLocal(sv *Supervisor, inst *instance, f discover.FileRef, pol discover.Policy, secrets []string, proc process) error {
	cfg := sv.Cfg
	if cfg.Declared == nil {
		return errors.New("declared plugin, but this host serves none (core.Config.Declared is nil)")
	}
	l, err := decl.DecodeLaunch(proc.launch)
	if err != nil {
		return fmt.Errorf("declared plugin: %w", err)
	}
	lp := &localPlugin{ended: make(chan struct{})}
	lp.done, lp.endCalls = context.WithCancel(context.Background())
	if l.Commands != nil && sv.Cgroups != nil {
		if lp.group, err = sv.Cgroups.Child(inst.name); err != nil {
			return fmt.Errorf("cgroup: %w", err)
		}
		if err := enforceGroupLimits(pol.Spec, lp.group, sv.NoCgroups); err != nil {
			lp.group.Remove()
			return err
		}
	}
	pluginLog := cfg.Logger.Named("plugin").Named(inst.name)
	env := slices.Concat(core.PluginEnv(nil, inst.name, cfg.PluginEnv, os.Environ()), pol.Env, secrets)
	starter := &launcher.Starter{
		// The policy's variables and secrets come last: this plugin's
		// only, never logged.
		Env:     env,
		Granted: launcher.Granted(env),
		Stderr:  &LineLogger{Log: pluginLog, Tail: inst.stderr, Stream: "stderr"},
		Confine: func(spec *launcher.Spec) error {
			spec.Verify = proc.withVerify(spec.Verify)
			return confineDeclared(sv, inst.name, pol.Spec, proc.launcher, lp.group, spec)
		},
		Refused: func(e *launcher.ChangedError) {
			pluginLog.Error("refused to run a rewritten copy", "file", e.File, "error", e.Detail())
		},
		Started: func(p *launcher.Process) {
			if k := sv.Keeper.Load(); k != nil && l.Commands == nil && sv.Cgroups == nil {
				_ = k.Track(p.Pid()) // a server leads its own process group
			}
		},
	}
	lp.plugin = cfg.Declared(l, starter, pluginLog)
	inst.local = lp
	inst.tool = wire.NewLocalClient(lp.plugin, int(cfg.MaxResultBytes), lp.done)
	ctx, cancel := context.WithCancel(context.Background())
	lp.stopRun = cancel
	go lp.run(ctx)
	return nil
}

// confineDeclared completes the Spec of a program of declared plugin
// name: it runs as the plugin user, behind the sandbox launcher when the
// policy needs it (launch, the launcher's copy; nil when not needed), in
// the commands' shared cgroup group or, for a server, a cgroup of its
// own with the policy's limits. Errors: limits that need a cgroup this
// host does not have, a cgroup that cannot be made, Wrap's.
func confineDeclared(sv *Supervisor, name string, spec sandbox.Spec, launch []string, group *cgroup.Group, ls *launcher.Spec) error {
	ls.User = sv.Cfg.PluginUser
	if len(launch) > 0 {
		argv, env, err := launcher.Wrap(launch, spec, append([]string{ls.Path}, ls.Args...), ls.Env)
		if err != nil {
			return err
		}
		ls.Path, ls.Args, ls.Env, ls.Arg0 = argv[0], argv[1:], env, ""
	}
	switch {
	case group != nil:
		ls.Cgroup, ls.SharedCgroup = group, true
		return nil
	case sv.Cgroups != nil:
		cg, err := sv.Cgroups.Child(name)
		if err != nil {
			return fmt.Errorf("cgroup: %w", err)
		}
		if err := enforceGroupLimits(spec, cg, sv.NoCgroups); err != nil {
			cg.Remove()
			return err
		}
		ls.Cgroup = cg
		return nil
	}
	return enforceGroupLimits(spec, nil, sv.NoCgroups)
}

// run runs the plugin until it ends and records why.
func (lp *localPlugin) run(ctx context.Context) {
	err := lp.plugin.Run(ctx)
	st := "ended"
	if err != nil {
		st = err.Error()
	}
	lp.status.Store(&st)
	close(lp.ended)
}

// exitStatus is why Run returned, "" while it runs.
func (lp *localPlugin) exitStatus() string {
	if st := lp.status.Load(); st != nil {
		return *st
	}
	return ""
}

// stop ends the plugin gracefully: calls in flight end, its server is
// shut down (stdin closed, then SIGTERM, then SIGKILL, as the MCP stdio
// transport asks). It does not wait.
func (lp *localPlugin) stop() {
	lp.endCalls()
	lp.calls.stopCalls()
	lp.stopRun()
	lp.removeGroup()
}

// kill ends the plugin at once: its program is SIGKILLed.
func (lp *localPlugin) kill() {
	lp.endCalls()
	lp.calls.stopCalls()
	lp.plugin.Kill()
	lp.stopRun()
	lp.removeGroup()
}

// removeGroup kills the commands still running and removes their
// cgroup.
func (lp *localPlugin) removeGroup() {
	if lp.group != nil {
		lp.group.Remove()
	}
}
