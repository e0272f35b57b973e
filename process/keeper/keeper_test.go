package keeper

import (
	"bytes"
	"strings"
	"testing"
)

// TestMainRefusesOtherCommandLines: the keeper runs only as
// "PROGRAM keeper [DIR]"; any other command line exits ExitUsage with a
// line saying so, before reading its input.
func TestMainRefusesOtherCommandLines(t *testing.T) {
	for _, args := range [][]string{{Program}, {Program, "run"}, {Program, Command, "a", "b"}} {
		var stderr bytes.Buffer
		if got := Main(args, strings.NewReader("pgid 1234567\n"), &stderr); got != ExitUsage || !strings.Contains(stderr.String(), "usage") {
			t.Errorf("%q: exit %d, stderr %q; want %d and a usage line", args, got, stderr.String(), ExitUsage)
		}
	}
}
