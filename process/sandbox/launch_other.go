//go:build !linux

package sandbox

import (
	"fmt"
	"io"
)

// Launch is the launcher; outside Linux it applies nothing and fails with
// ExitNotApplied (rlimits and Landlock are applied only on Linux).
func Launch(_ []string, stderr io.Writer) int {
	fmt.Fprintln(stderr, "[ERROR] sandbox: the plugin launcher runs only on Linux")
	return ExitNotApplied
}
