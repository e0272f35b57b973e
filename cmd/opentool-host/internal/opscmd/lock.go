package opscmd

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/cmd/opentool-host/internal/hostflags"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/protocol/lockfile"
)

// Lock is "opentool-host lock": it starts every plugin of --dir
// (as `list --dir` does), and writes DIR/opentool.lock pinning each
// plugin's files and function definitions (package lockfile). With
// --update NAME only those plugins are pinned anew; the rest of an
// existing lock is kept.
func Lock() *cli.Command {
	flags := hostflags.LocalFlags("warn", false,
		hostflags.DirFlag(true),
		&cli.StringSliceFlag{Name: "update", Usage: "pin only plugin `NAME` anew (repeatable), keeping the rest of the existing lock"},
	)
	return &cli.Command{
		Name:      "lock",
		Usage:     "pin the plugins of --dir: write DIR/" + lockfile.Name + " with each file's sha256 and each function definition's digest (enforced by run --locked)",
		UsageText: "opentool-host lock --dir plugins\n   opentool-host lock --dir plugins --update calculator",
		Flags:     flags,
		Action:    lockAction,
	}
}

func lockAction(c *cli.Context) error {
	cfg, err := hostflags.Config(c)
	if err != nil {
		return err
	}
	update := c.StringSlice("update")
	lock, failed, err := host.WriteLock(c.Context, cfg, update)
	if err != nil {
		if len(update) > 0 {
			return cli.Exit("lock --update: "+err.Error(), 1)
		}
		return cli.Exit("lock: "+err.Error(), 1)
	}
	fmt.Fprintf(c.App.Writer, "wrote %s: %d files, %d plugins with functions\n", filepath.Join(cfg.Dir, lockfile.Name), len(lock.Files), len(lock.Functions))
	if len(failed) > 0 {
		fmt.Fprintf(c.App.ErrWriter, "lock: these plugins did not start, so their functions are not pinned: %s\n", strings.Join(failed, ", "))
		return cli.Exit("", 1)
	}
	return nil
}
