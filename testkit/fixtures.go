package testkit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// Fixture reads and parses the OpenTool fixture name (a file of the
// repository's testdata/opentool, see FixturePath). A missing fixture
// fails the test.
func Fixture(t testing.TB, name string) *opentool.OpenTool {
	t.Helper()
	b, err := os.ReadFile(FixturePath(t, name))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := opentool.Parse(b)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	return doc
}

// FixturePath returns the path of the OpenTool fixture name: a file of
// testdata/opentool at the repository root (the reference SDKs' documents,
// reference-mock-tool.json and reference-weather.json).
func FixturePath(t testing.TB, name string) string {
	return filepath.Join(RepoRoot(t), "testdata", "opentool", name)
}

// WantToolError fails the test unless err is a tool error (see toolError) with the
// given code and a message containing contains.
func WantToolError(t testing.TB, err error, code int, contains string) {
	t.Helper()
	gotCode, msg, ok := toolError(err)
	if !ok {
		t.Fatalf("error %v (%T) is not a tool error", err, err)
	}
	if gotCode != code || !strings.Contains(msg, contains) {
		t.Errorf("error = %d %q, want %d containing %q", gotCode, msg, code, contains)
	}
}

// toolError returns the code and message of a tool's own error, whichever
// side of the wire it was seen on: *pluginsdk.Error (in the plugin),
// *wire.ToolError (on the connection) or a *core.Error of KindTool.
func toolError(err error) (int, string, bool) {
	var pe *pluginsdk.Error
	var we *wire.ToolError
	switch he := core.AsError(err); {
	case he != nil && he.Kind == core.KindTool:
		return he.Code, he.Message, true
	case errors.As(err, &we):
		return we.Code, we.Message, true
	case errors.As(err, &pe):
		return pe.Code, pe.Message, true
	}
	return 0, "", false
}
