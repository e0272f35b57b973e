package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// EnvSpec is the environment variable that carries a Spec, as the JSON of
// Spec.Encode, from the host to the launcher ("opentool-host launch --
// PROGRAM ARGS..."). The launcher removes it before it runs PROGRAM.
const EnvSpec = "OPENTOOL_SANDBOX"

// Exit statuses of the launcher when it does not run PROGRAM.
const (
	// ExitUsage: the launcher was started without a valid Spec in EnvSpec
	// or without a program (it is started by a host, not by hand).
	ExitUsage = 2
	// ExitNotApplied: the Spec could not be applied: Spec.Require is set
	// and the kernel lacks a feature the Spec asks for, or applying it
	// failed (a limit or Landlock call returned an error). The reason is
	// one "[ERROR] sandbox: ..." line on stderr, which the host logs and
	// keeps in the plugin's crash report.
	ExitNotApplied = 3
	// ExitExec: PROGRAM could not be executed (missing, not executable,
	// or denied by the sandbox itself).
	ExitExec = 126
)

// NeedsLauncher reports whether s asks for something only the launcher
// applies: a memory, CPU-time or process limit (rlimits), the Landlock
// filesystem sandbox or the network denial. CPUPercent alone does not
// (it is a cgroup setting the host makes).
func (s Spec) NeedsLauncher() bool {
	return s.MemoryBytes > 0 || s.CPUSeconds > 0 || s.Processes > 0 || s.Confine || s.DenyNetwork
}

// Check reports the first fault of s: a negative limit, or a Read or
// Write path that is empty, relative, not clean or holds a NUL byte
// ("sandbox: read[1]: \"data\" is not an absolute path"). The host
// resolves paths before it builds a Spec; the launcher refuses a Spec
// that fails Check.
func (s Spec) Check() error {
	switch {
	case s.MemoryBytes < 0:
		return fmt.Errorf("sandbox: memory_bytes %d is negative", s.MemoryBytes)
	case s.CPUPercent < 0:
		return fmt.Errorf("sandbox: cpu_percent %d is negative", s.CPUPercent)
	case s.CPUSeconds < 0:
		return fmt.Errorf("sandbox: cpu_seconds %d is negative", s.CPUSeconds)
	case s.Processes < 0:
		return fmt.Errorf("sandbox: processes %d is negative", s.Processes)
	}
	for _, list := range []struct {
		member string
		paths  []string
	}{{"read", s.Read}, {"write", s.Write}} {
		for i, p := range list.paths {
			if !filepath.IsAbs(p) || filepath.Clean(p) != p || strings.ContainsRune(p, 0) {
				return fmt.Errorf("sandbox: %s[%d]: %q is not a clean absolute path", list.member, i, p)
			}
		}
	}
	return nil
}

// Encode returns s as the value of EnvSpec. Errors: those of Check.
func (s Spec) Encode() (string, error) {
	if err := s.Check(); err != nil {
		return "", err
	}
	b, err := json.Marshal(s)
	return string(b), err
}

// Decode parses the value of EnvSpec exactly: unknown members, trailing
// data and a Spec that fails Check are errors.
func Decode(value string) (Spec, error) {
	var s Spec
	dec := json.NewDecoder(bytes.NewReader([]byte(value)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Spec{}, fmt.Errorf("sandbox: %s: %w", EnvSpec, err)
	}
	if dec.More() {
		return Spec{}, fmt.Errorf("sandbox: %s: data after the spec", EnvSpec)
	}
	return s, s.Check()
}

// errNoSpec: the launcher's environment has no EnvSpec.
var errNoSpec = errors.New("sandbox: " + EnvSpec + " is not set: the launcher is started by opentool-host for a plugin, not by hand")

// takeSpec reads the Spec from the environment and removes EnvSpec, so
// that the program run next does not see it.
func takeSpec() (Spec, error) {
	value, ok := os.LookupEnv(EnvSpec)
	if !ok {
		return Spec{}, errNoSpec
	}
	if err := os.Unsetenv(EnvSpec); err != nil {
		return Spec{}, err
	}
	return Decode(value)
}
