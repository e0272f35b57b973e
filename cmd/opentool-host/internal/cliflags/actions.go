package cliflags

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// Flag Actions: urfave/cli runs a flag's Action only for a flag given on
// the command line or in the environment (defaults are in range), and
// each of these refuses a value out of range with a UsageError naming
// the flag (--name) and the range.

// AtLeast is a flag Action refusing values of --name (an IntFlag or
// Int64Flag) below min: "invalid value V for --NAME: must be at least
// MIN".
func AtLeast[T int | int64](name string, min T) func(*cli.Context, T) error {
	return func(c *cli.Context, v T) error {
		if v < min {
			return UsageError(c, fmt.Sprintf("invalid value %d for --%s: must be at least %d", v, name, min))
		}
		return nil
	}
}

// Positive is a flag Action refusing durations of --name that are not
// above 0.
func Positive(name string) func(*cli.Context, time.Duration) error {
	return func(c *cli.Context, d time.Duration) error {
		if d <= 0 {
			return UsageError(c, fmt.Sprintf("invalid value %v for --%s: must be greater than 0 (e.g. 30s)", d, name))
		}
		return nil
	}
}

// NonNegative is a flag Action refusing durations of --name below 0.
func NonNegative(name string) func(*cli.Context, time.Duration) error {
	return durationAtLeast(name, 0, "0")
}

// AtLeastDuration is a flag Action refusing durations of --name below
// min.
func AtLeastDuration(name string, min time.Duration) func(*cli.Context, time.Duration) error {
	return durationAtLeast(name, min, min.String())
}

// durationAtLeast refuses durations of --name below min, which the
// message shows as shown.
func durationAtLeast(name string, min time.Duration, shown string) func(*cli.Context, time.Duration) error {
	return func(c *cli.Context, d time.Duration) error {
		if d < min {
			return UsageError(c, fmt.Sprintf("invalid value %v for --%s: must be at least %s", d, name, shown))
		}
		return nil
	}
}

// OneOf is a flag Action that accepts only the given values of --name.
// Its error is a plain one (exit status 1), not a UsageError:
// "--NAME must be one of A, B, not "V"".
func OneOf(name string, values ...string) func(*cli.Context, string) error {
	return func(_ *cli.Context, v string) error {
		if slices.Contains(values, v) {
			return nil
		}
		return fmt.Errorf("--%s must be one of %s, not %q", name, strings.Join(values, ", "), v)
	}
}
