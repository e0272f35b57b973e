package launcher

import (
	"errors"
	"slices"

	"github.com/opentool-host/opentool-host/process/sandbox"
)

// Wrap puts the sandbox launcher (launch, e.g. [host-binary, "launch"])
// in front of argv when spec needs it (sandbox.Spec.NeedsLauncher): the
// process then runs launch + ["--"] + argv with the Spec in
// sandbox.EnvSpec, applies the rlimits, the Landlock sandbox and the
// network filter to itself and executes argv in place, keeping its pid.
// Without a need, argv and env come back unchanged. Errors: no launch
// command, or a Spec that fails sandbox.Spec.Check (a relative path).
func Wrap(launch []string, spec sandbox.Spec, argv, env []string) ([]string, []string, error) {
	if !spec.NeedsLauncher() {
		return argv, env, nil
	}
	if len(launch) == 0 {
		return nil, nil, errors.New("the plugin's limits or sandbox need the launcher, but this host has none (core.Config.Launcher is empty)")
	}
	value, err := spec.Encode()
	if err != nil {
		return nil, nil, err
	}
	return slices.Concat(launch, []string{"--"}, argv), append(slices.Clip(env), sandbox.EnvSpec+"="+value), nil
}
