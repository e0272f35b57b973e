package testutil

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/opentool"
	"github.com/opentool-host/opentool-host/pluginsdk"
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

// WantToolError fails the test unless err is a *pluginsdk.Error with the
// given code and a message containing contains.
func WantToolError(t testing.TB, err error, code int, contains string) {
	t.Helper()
	var te *pluginsdk.Error
	if !errors.As(err, &te) {
		t.Fatalf("error %v (%T) is not a *pluginsdk.Error", err, err)
	}
	if te.Code != code || !strings.Contains(te.Message, contains) {
		t.Errorf("error = %d %q, want %d containing %q", te.Code, te.Message, code, contains)
	}
}
