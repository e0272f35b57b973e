package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/lockfile"
	"github.com/opentool-host/opentool-host/ociplugin"
)

// Plugins as OCI artifacts (package ociplugin; docs/oci-plugins.md):
// `push` uploads a plugin's files, `pull` downloads one into a plugins
// folder, where a running host hot-loads it, and pins it in the folder's
// opentool.lock when there is one.

// registryFlags are the flags of a command that talks to a registry.
func registryFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "plain-http", Usage: "talk to the registry over plain HTTP (a registry on loopback); default HTTPS"},
		&cli.StringFlag{Name: "username", Usage: "log in to the registry as `USER` (the password is read from stdin: --password-stdin); default: the credentials of the Docker config file ($DOCKER_CONFIG or ~/.docker/config.json), else anonymous"},
		&cli.BoolFlag{Name: "password-stdin", Usage: "read the --username's password (or token) from the first line of stdin"},
	}
}

// repository is ociplugin.Repository with the registry flags (the
// password read from stdin's first line).
func repository(c *cli.Context, ref string) (*remote.Repository, error) {
	o := ociplugin.RemoteOptions{PlainHTTP: c.Bool("plain-http"), Username: c.String("username"), Warn: c.App.ErrWriter}
	switch {
	case o.Username != "" && !c.Bool("password-stdin"):
		return nil, usageError(c, "--username needs --password-stdin (the password is read from stdin)")
	case o.Username != "":
		line, err := bufio.NewReader(c.App.Reader).ReadString('\n')
		if err != nil && line == "" {
			return nil, cli.Exit(fmt.Sprintf("--password-stdin: %v", err), 1)
		}
		o.Password = strings.TrimRight(line, "\r\n")
	case c.Bool("password-stdin"):
		return nil, usageError(c, "--password-stdin needs --username")
	}
	repo, err := ociplugin.Repository(ref, o)
	if err != nil {
		return nil, usageError(c, err.Error())
	}
	return repo, nil
}

// pushCommand is "opentool-host push".
func pushCommand() *cli.Command {
	return &cli.Command{
		Name:  "push",
		Usage: "push a plugin (its executable, NAME.mcp.json, NAME.tools.json, NAME.policy.json) to an OCI registry as one artifact (docs/oci-plugins.md)",
		UsageText: "opentool-host push --dir plugins calculator registry.example/plugins/calculator:1.0\n" +
			"   opentool-host push plugins/opentool-plugin-calculator plugins/calculator.policy.json registry.example/plugins/calculator:1.0",
		ArgsUsage: "NAME REF (with --dir) | FILE... REF",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "dir", Aliases: []string{"d"}, Usage: "push every file of plugin NAME in `DIR` (the arguments are then NAME REF)"},
			&cli.StringFlag{Name: "platform", Usage: "the binary's platform `GOOS/GOARCH` (or \"any\") when its header does not tell (not an ELF, Mach-O or PE file, nor a #! script); a header that tells must agree"},
		}, registryFlags()...),
		Action: pushAction,
	}
}

func pushAction(c *cli.Context) error {
	args := c.Args().Slice()
	dir := c.String("dir")
	switch {
	case dir != "" && len(args) != 2:
		return usageError(c, "push --dir DIR takes NAME REF")
	case len(args) < 2:
		return usageError(c, "push takes FILE... REF, or NAME REF with --dir")
	}
	ref := args[len(args)-1]
	var p *ociplugin.Plugin
	var err error
	if dir != "" {
		p, err = ociplugin.FromDir(dir, args[0])
	} else {
		p, err = ociplugin.FromPaths(args[:len(args)-1])
	}
	if err != nil {
		return cli.Exit("push: "+err.Error(), 1)
	}
	repo, err := repository(c, ref)
	if err != nil {
		return err
	}
	if repo.Reference.ValidateReferenceAsDigest() == nil {
		return usageError(c, fmt.Sprintf("push %s: push to a tag (REGISTRY/REPOSITORY:TAG), not a digest", ref))
	}
	desc, err := ociplugin.Push(c.Context, repo, repo.Reference.Reference, p, ociplugin.PushOptions{Platform: c.String("platform")})
	if err != nil {
		return cli.Exit("push: "+err.Error(), 1)
	}
	fmt.Fprintf(c.App.Writer, "pushed %s@%s: %s\n", repo.Reference, desc.Digest, ociplugin.Describe(p.Files, p.Platform))
	return nil
}

// pullCommand is "opentool-host pull".
func pullCommand() *cli.Command {
	flags := append([]cli.Flag{
		dirFlag(true),
		&cli.Int64Flag{Name: "max-layer-bytes", Value: ociplugin.DefaultMaxLayerBytes, Usage: "refuse an artifact with a file larger than `BYTES` (>= 1)", Action: atLeast[int64]("max-layer-bytes", 1)},
		&cli.StringFlag{Name: "platform", Usage: "the `GOOS/GOARCH` the plugin binary must be built for; default this machine's"},
		&cli.BoolFlag{Name: "no-lock", Usage: "do not pin the plugin in DIR/" + lockfile.Name + " even when there is one"},
	}, registryFlags()...)
	flags = append(flags, hostFlags()...)
	flags = append(flags, logFlags("warn")...)
	return &cli.Command{
		Name: "pull",
		Usage: "pull a plugin artifact into --dir (verified, written atomically: a running host hot-loads it), " +
			"and pin it in DIR/" + lockfile.Name + " when there is one (the plugin is started once to digest its functions, as by lock; host flags apply)",
		UsageText: "opentool-host pull registry.example/plugins/calculator:1.0 --dir plugins\n" +
			"   opentool-host pull 127.0.0.1:5000/plugins/calculator@sha256:9c1e… --dir plugins --plain-http",
		ArgsUsage: "REF",
		Flags:     flags,
		Action:    pullAction,
	}
}

func pullAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageError(c, "pull takes one REF (REGISTRY/REPOSITORY:TAG or @sha256:DIGEST)")
	}
	ref, dir := c.Args().First(), c.String("dir")
	repo, err := repository(c, ref)
	if err != nil {
		return err
	}
	start := time.Now()
	p, err := ociplugin.Fetch(c.Context, repo, repo.Reference.Reference, dir, ociplugin.PullOptions{
		MaxLayerBytes: c.Int64("max-layer-bytes"),
		Platform:      c.String("platform"),
	})
	if err != nil {
		return cli.Exit("pull: "+err.Error(), 1)
	}
	defer p.Discard()
	fetched := time.Since(start)
	var pinned string
	var restore func() error
	if !c.Bool("no-lock") {
		if pinned, restore, err = pinPulled(c, p, filepath.Join(dir, lockfile.Name), repo.Reference.String()); err != nil {
			return cli.Exit("pull: "+err.Error(), 1)
		}
	}
	if err := p.Install(); err != nil {
		if restore != nil {
			if rerr := restore(); rerr != nil {
				err = fmt.Errorf("%w; putting the previous %s back also failed: %v", err, lockfile.Name, rerr)
			}
		}
		return cli.Exit("pull: "+err.Error(), 1)
	}
	fmt.Fprintf(c.App.Writer, "pulled %s@%s into %s in %v: %s\n", repo.Reference, p.Manifest.Digest, dir, fetched.Round(time.Millisecond), ociplugin.Describe(p.Files, p.Platform))
	if pinned != "" {
		fmt.Fprintln(c.App.Writer, pinned)
	}
	return nil
}

// pinPulled pins the pulled plugin in the lock file at path when there
// is one, before it is installed (so that a host run --locked finds the
// pins in place when the files arrive): it starts the staged plugin in a
// host of its own, with the host flags (as `lock` starts the folder's),
// copies what that host pins of it into the lock (host.CopyPins, as `lock
// --update NAME` does) and records each file's source (ref and the
// manifest's digest). It returns what to tell the user and a function
// that puts the previous lock back; "", nil, nil without a lock file.
// Errors: the lock cannot be read or written, or the plugin did not
// start (nothing is installed then).
func pinPulled(c *cli.Context, p *ociplugin.Pulled, path, ref string) (string, func() error, error) {
	old, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	lock, err := lockfile.Parse(old)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", path, err)
	}
	cfg, err := hostConfig(c)
	if err != nil {
		return "", nil, err
	}
	cfg.Dir = p.StageDir()
	now, ps, err := host.Snapshot(c.Context, cfg, newHost)
	if err != nil {
		return "", nil, err
	}
	if failed := host.NotServing(ps); len(failed) > 0 {
		return "", nil, fmt.Errorf("not installed: the plugin did not start, so its functions cannot be pinned in %s: %s (--no-lock installs it unpinned)", path, strings.Join(failed, ", "))
	}
	var names []string
	for _, ps := range ps {
		names = append(names, ps.Name)
	}
	if err := host.CopyPins(lock, now, names, ps); err != nil {
		return "", nil, err
	}
	for _, f := range p.Files {
		lock.SetSource(f.Name, lockfile.Source{Ref: ref, Manifest: p.Manifest.Digest.String(), SHA256: f.SHA256})
	}
	if err := lock.Write(path); err != nil {
		return "", nil, err
	}
	restore := func() error {
		prev, err := lockfile.Parse(old)
		if err != nil {
			return err
		}
		return prev.Write(path)
	}
	return fmt.Sprintf("pinned in %s: %s", path, strings.Join(names, ", ")), restore, nil
}

// ociBoolFlags are the boolean flags of push and pull, as interspersed
// must know them to move flags given after the arguments ("pull REF
// --dir DIR --plain-http") before them.
func ociBoolFlags() map[string]bool {
	out := map[string]bool{}
	for _, cmd := range []*cli.Command{pushCommand(), pullCommand()} {
		for _, f := range cmd.Flags {
			if _, ok := f.(*cli.BoolFlag); ok {
				for _, n := range f.Names() {
					out["--"+n], out["-"+n] = true, true
				}
			}
		}
	}
	return out
}
