package host

import (
	"errors"
	"slices"

	"github.com/opentool-host/opentool-host/sandbox"
)

// launchCommand puts the launcher (Config.Launcher) in front of argv when
// spec needs it (sandbox.Spec.NeedsLauncher): the process then runs
// Launcher + ["--"] + argv with the Spec in sandbox.EnvSpec, applies the
// limits and the Landlock sandbox to itself and executes argv in place,
// keeping its pid. The launcher grants the program it executes and
// go-plugin's socket folder itself: neither is known here (the binary
// copy is made after command, the socket folder by go-plugin at start).
// Errors: no Launcher configured, or a Spec that fails sandbox.Spec.Check
// (a relative path).
func launchCommand(cfg *Config, spec sandbox.Spec, argv, env []string) ([]string, []string, error) {
	if !spec.NeedsLauncher() {
		return argv, env, nil
	}
	if len(cfg.Launcher) == 0 {
		return nil, nil, errors.New("the plugin's limits or sandbox need the launcher, but this host has none (host.Config.Launcher is empty)")
	}
	value, err := spec.Encode()
	if err != nil {
		return nil, nil, err
	}
	return slices.Concat(cfg.Launcher, []string{"--"}, argv), append(slices.Clip(env), sandbox.EnvSpec+"="+value), nil
}
