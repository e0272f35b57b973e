package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/cmd/opentool-host/internal/cliflags"
)

// TestHelpNamesTheFrontEnds: the top-level help names the three front
// ends and stdio.
func TestHelpNamesTheFrontEnds(t *testing.T) {
	help := string(helpOutput(t, "--help"))
	for _, want := range []string{"OpenTool HTTP", "/opentool/*", "MCP", "/mcp", "stdio", "Open Tool Calling", "/otc/*"} {
		if !strings.Contains(help, want) {
			t.Errorf("opentool-host --help does not name %q:\n%s", want, help)
		}
	}
}

// TestHelpFlagsFitAndAreGrouped: in every command's help, each line of
// its flags fits in cliflags.HelpWidth columns; every flag of run and mcp
// but the first few (--dir, --addr, --watch, --help) is under a category.
func TestHelpFlagsFitAndAreGrouped(t *testing.T) {
	for _, cmd := range newApp().Commands {
		help := string(helpOutput(t, cmd.Name, "--help"))
		_, opts, _ := strings.Cut(help, "\nOPTIONS:\n")
		for _, l := range strings.Split(opts, "\n") {
			if len(l) > cliflags.HelpWidth {
				t.Errorf("%s --help: a flag line of %d columns (> %d):\n%s", cmd.Name, len(l), cliflags.HelpWidth, l)
			}
		}
		if cmd.Name != "run" && cmd.Name != "mcp" {
			continue
		}
		for _, f := range cmd.VisibleFlags() {
			cf, ok := f.(cli.CategorizableFlag)
			if name := f.Names()[0]; ok && cf.GetCategory() == "" && !slices.Contains([]string{"dir", "addr", "watch", "help"}, name) {
				t.Errorf("%s: --%s has no category: add it to serveCategories (run.go) or hostflags' categories", cmd.Name, name)
			}
		}
	}
}

// TestOneShotHelpHidesServingFlags: list, call and export (which read
// --url or start a host for one job) do not show the flags of a host
// serving many calls, but still take them; list and export, which call
// nothing, do not show the call limits either.
func TestOneShotHelpHidesServingFlags(t *testing.T) {
	serving := []string{"max-concurrency", "max-queue", "plugin-transport"}
	calling := []string{"call-timeout", "max-result"}
	for _, name := range []string{"list", "call", "export"} {
		hidden := serving
		if name != "call" {
			hidden = slices.Concat(serving, calling)
		}
		help := string(helpOutput(t, name, "--help"))
		for _, f := range hidden {
			if strings.Contains(help, "--"+f+" ") {
				t.Errorf("%s --help shows --%s", name, f)
			}
		}
		cmd := newApp().Command(name)
		for _, f := range hidden {
			if !slices.ContainsFunc(cmd.Flags, func(fl cli.Flag) bool { return fl.Names()[0] == f }) {
				t.Errorf("%s no longer takes --%s (command lines that give it would fail)", name, f)
			}
		}
		if name == "call" && !strings.Contains(help, "--call-timeout ") {
			t.Errorf("call --help does not show --call-timeout:\n%s", help)
		}
	}
}
