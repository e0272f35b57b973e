package supervise

import (
	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/process/sandbox"
)

// ProgramStarter is the launcher.Starter of a program the host runs for
// itself, confined as a plugin named name with spec is (confineDeclared:
// the plugin user, the sandbox launcher Config.Launcher when spec needs
// it, a cgroup of its own where the host has cgroups, known to the
// keeper without one): the code runners of run_code (host/codemode.go).
// Its stderr is logged under name; its environment is empty.
func (sv *Supervisor) ProgramStarter(name string, spec sandbox.Spec, log hclog.Logger) *launcher.Starter {
	return &launcher.Starter{
		Stderr: &LineLogger{Log: log, Tail: NewTailBuffer(20), Stream: "stderr"},
		Confine: func(ls *launcher.Spec) error {
			return confineDeclared(sv, name, spec, sv.Cfg.Launcher, nil, ls)
		},
		Started: func(p *launcher.Process) {
			if k := sv.Keeper.Load(); k != nil && sv.Cgroups == nil {
				_ = k.Track(p.Pid())
			}
		},
	}
}
