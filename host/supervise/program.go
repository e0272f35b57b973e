package supervise

import (
	"slices"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/process/launcher"
	"github.com/opentool-host/opentool-host/process/sandbox"
)

// ProgramStarter is the launcher.Starter of a program the host runs for
// itself, confined as a plugin named name with spec is (confineDeclared:
// the plugin user, the sandbox launcher Config.Launcher when spec needs
// it, a cgroup of its own where the host has cgroups, known to the
// keeper without one): the code runners of run_code (host/codemode.go).
// As a plugin's, the program and the launcher run from their copies in
// the state folder (StateDir.Acquire: the plugin user can run them
// wherever the originals lie), each made at its first start and held
// for the host's life: a program rewritten later is not picked up.
// Its stderr is logged under name; its environment is empty.
func (sv *Supervisor) ProgramStarter(name string, spec sandbox.Spec, log hclog.Logger) *launcher.Starter {
	var mu sync.Mutex
	copies := map[string]string{}
	copyOf := func(path string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if c, ok := copies[path]; ok || sv.State == nil {
			return c, nil
		}
		c, _, err := sv.State.Acquire(path)
		if err != nil {
			return "", err
		}
		copies[path] = c
		return c, nil
	}
	return &launcher.Starter{
		Stderr: &LineLogger{Log: log, Tail: NewTailBuffer(20), Stream: "stderr"},
		Confine: func(ls *launcher.Spec) error {
			launch := sv.Cfg.Launcher
			if c, err := copyOf(ls.Path); err != nil {
				return err
			} else if c != "" {
				ls.Path = c
			}
			if spec.NeedsLauncher() && len(launch) > 0 {
				c, err := copyOf(launch[0])
				if err != nil {
					return err
				}
				if c != "" {
					launch = slices.Concat([]string{c}, launch[1:])
				}
			}
			return confineDeclared(sv, name, spec, launch, nil, ls)
		},
		Started: func(p *launcher.Process) {
			if k := sv.Keeper.Load(); k != nil && sv.Cgroups == nil {
				_ = k.Track(p.Pid())
			}
		},
	}
}
