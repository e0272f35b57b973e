package opentool

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fixtureDir holds the reference documents used by the whole project's
// tests (testdata/opentool at the repository root).
const fixtureDir = "../../testdata/opentool"

var fixtureNames = []string{"reference-mock-tool.json", "reference-weather.json"}

// readFixture returns a fixture of fixtureDir; a missing fixture fails the test.
func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	return data
}

// parseFixture parses a fixture of fixtureDir, failing the test on any error.
func parseFixture(t testing.TB, name string) *OpenTool {
	t.Helper()
	doc, err := Parse(readFixture(t, name))
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return doc
}

// faultsOf returns the faults of err, failing unless err is a
// *ValidationError (nil gives nil).
func faultsOf(t testing.TB, err error) []Fault {
	t.Helper()
	if err == nil {
		return nil
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v (%T) is not a *ValidationError", err, err)
	}
	if !errors.Is(err, ErrInvalidDocument) {
		t.Fatalf("errors.Is(%v, ErrInvalidDocument) = false", err)
	}
	return ve.Faults
}

// faults builds a []Fault from "path: message" strings (split at the first
// ": ").
func faults(lines ...string) []Fault {
	var out []Fault
	for _, l := range lines {
		p, m, _ := strings.Cut(l, ": ")
		out = append(out, Fault{Path: p, Message: m})
	}
	return out
}

func faultLines(fs []Fault) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("\n\t" + f.String())
	}
	return b.String()
}

func equalFaults(a, b []Fault) bool { return slices.Equal(a, b) }
