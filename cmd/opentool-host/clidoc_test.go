package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/testkit"
)

// cliDocPath is the CLI reference, relative to the repository root.
const cliDocPath = "docs/reference/cli.md"

// cliDocUpdateEnv, set to 1, makes TestCLIReferenceIsGenerated rewrite
// cliDocPath instead of comparing (make docs).
const cliDocUpdateEnv = "OPENTOOL_UPDATE_DOCS"

// TestCLIReferenceIsGenerated checks that docs/reference/cli.md is exactly
// the help text of the app and of every visible command, so the reference
// cannot drift from the flags. OPENTOOL_UPDATE_DOCS=1 rewrites it.
func TestCLIReferenceIsGenerated(t *testing.T) {
	got := renderCLIReference(t)
	path := filepath.Join(testkit.RepoRoot(t), cliDocPath)
	if os.Getenv(cliDocUpdateEnv) == "1" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run 'make docs' to generate it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not the CLI's help: run 'make docs' and commit the result", cliDocPath)
	}
}

// renderCLIReference returns the Markdown of the CLI reference: the app's
// help, then each visible command's, each in a text block.
func renderCLIReference(t *testing.T) []byte {
	t.Helper()
	var doc bytes.Buffer
	doc.WriteString("# CLI reference\n\n")
	doc.WriteString("Generated from `opentool-host --help` and `opentool-host COMMAND --help` by\n")
	doc.WriteString("`make docs`; `make test` fails when this page and the help differ.\n\n")
	doc.WriteString("## opentool-host\n\n```text\n")
	doc.Write(helpOutput(t, "--help"))
	doc.WriteString("```\n")
	for _, cmd := range newApp().Commands {
		if cmd.Hidden {
			continue
		}
		doc.WriteString("\n## opentool-host " + cmd.Name + "\n\n```text\n")
		doc.Write(helpOutput(t, cmd.Name, "--help"))
		doc.WriteString("```\n")
	}
	return doc.Bytes()
}

// helpOutput runs the app with args and returns what it printed, with
// trailing spaces cut from every line.
func helpOutput(t *testing.T, args ...string) []byte {
	t.Helper()
	app := newApp()
	var out bytes.Buffer
	app.Writer, app.ErrWriter = &out, &out
	if err := app.Run(append([]string{"opentool-host"}, args...)); err != nil {
		t.Fatalf("opentool-host %s: %v", strings.Join(args, " "), err)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}
