package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/lockfile"
)

// lockCommand is "opentool-host lock": it starts every plugin of --dir
// (as `list --dir` does), and writes DIR/opentool.lock pinning each
// plugin's files and function definitions (package lockfile). With
// --update NAME only those plugins are pinned anew; the rest of an
// existing lock is kept.
func lockCommand() *cli.Command {
	flags := append([]cli.Flag{
		dirFlag(true),
		&cli.StringSliceFlag{Name: "update", Usage: "pin only plugin `NAME` anew (repeatable), keeping the rest of the existing lock"},
	}, hostFlags()...)
	flags = append(flags, logFlags("warn")...)
	return &cli.Command{
		Name:      "lock",
		Usage:     "pin the plugins of --dir: write DIR/" + lockfile.Name + " with each file's sha256 and each function definition's digest (enforced by run --locked)",
		UsageText: "opentool-host lock --dir plugins\n   opentool-host lock --dir plugins --update calculator",
		Flags:     flags,
		Action:    lockAction,
	}
}

func lockAction(c *cli.Context) error {
	dir := c.String("dir")
	path := filepath.Join(dir, lockfile.Name)
	update := c.StringSlice("update")
	lock := lockfile.New()
	if len(update) > 0 {
		old, err := lockfile.Read(path)
		if err != nil {
			return cli.Exit(fmt.Sprintf("lock --update: %v", err), 1)
		}
		lock = old
	}
	cfg, err := hostConfig(c)
	if err != nil {
		return err
	}
	now, ps, err := host.Snapshot(c.Context, cfg, newHost)
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	failed := host.NotServing(ps)
	if len(update) > 0 {
		if err := host.CopyPins(lock, now, update, ps); err != nil {
			return cli.Exit("lock --update: "+err.Error(), 1)
		}
	} else {
		// A full lock re-pins every file but keeps where pulled files came
		// from (Write drops a source whose file is now pinned with other
		// bytes).
		if old, err := lockfile.Read(path); err == nil {
			now.Sources = old.Sources
		}
		lock = now
	}
	if err := lock.Write(path); err != nil {
		return cli.Exit(fmt.Sprintf("lock: %v", err), 1)
	}
	fmt.Fprintf(c.App.Writer, "wrote %s: %d files, %d plugins with functions\n", path, len(lock.Files), len(lock.Functions))
	if len(failed) > 0 {
		fmt.Fprintf(c.App.ErrWriter, "lock: these plugins did not start, so their functions are not pinned: %s\n", strings.Join(failed, ", "))
		return cli.Exit("", 1)
	}
	return nil
}
