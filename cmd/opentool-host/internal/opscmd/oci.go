package opscmd

import (
	"bufio"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/cmd/opentool-host/internal/cliflags"
	"github.com/opentool-host/opentool-host/cmd/opentool-host/internal/hostflags"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/ops/ociplugin"
	"github.com/opentool-host/opentool-host/protocol/lockfile"
	"oras.land/oras-go/v2/registry/remote"
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
		return nil, cliflags.UsageError(c, "--username needs --password-stdin (the password is read from stdin)")
	case o.Username != "":
		line, err := bufio.NewReader(c.App.Reader).ReadString('\n')
		if err != nil && line == "" {
			return nil, cli.Exit(fmt.Sprintf("--password-stdin: %v", err), 1)
		}
		o.Password = strings.TrimRight(line, "\r\n")
	case c.Bool("password-stdin"):
		return nil, cliflags.UsageError(c, "--password-stdin needs --username")
	}
	repo, err := ociplugin.Repository(ref, o)
	if err != nil {
		return nil, cliflags.UsageError(c, err.Error())
	}
	return repo, nil
}

// Push is "opentool-host push": a plugin's files (by path, or NAME of
// --dir) to an OCI registry as one artifact (package ociplugin).
func Push() *cli.Command {
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
		return cliflags.UsageError(c, "push --dir DIR takes NAME REF")
	case len(args) < 2:
		return cliflags.UsageError(c, "push takes FILE... REF, or NAME REF with --dir")
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
		return cliflags.UsageError(c, fmt.Sprintf("push %s: push to a tag (REGISTRY/REPOSITORY:TAG), not a digest", ref))
	}
	desc, err := ociplugin.Push(c.Context, repo, repo.Reference.Reference, p, ociplugin.PushOptions{Platform: c.String("platform")})
	if err != nil {
		return cli.Exit("push: "+err.Error(), 1)
	}
	fmt.Fprintf(c.App.Writer, "pushed %s@%s: %s\n", repo.Reference, desc.Digest, ociplugin.Describe(p.Files, p.Platform))
	return nil
}

// Pull is "opentool-host pull REF": a plugin artifact into --dir,
// verified and written atomically, pinned in DIR/opentool.lock when there
// is one (package ociplugin, host.InstallPinned).
func Pull() *cli.Command {
	flags := hostflags.LocalFlags("warn", false, append([]cli.Flag{
		hostflags.DirFlag(true),
		&cli.Int64Flag{Name: "max-layer-bytes", Value: ociplugin.DefaultMaxLayerBytes, Usage: "refuse an artifact with a file larger than `BYTES` (>= 1)", Action: cliflags.AtLeast[int64]("max-layer-bytes", 1)},
		&cli.StringFlag{Name: "platform", Usage: "the `GOOS/GOARCH` the plugin binary must be built for; default this machine's"},
		&cli.BoolFlag{Name: "no-lock", Usage: "do not pin the plugin in DIR/" + lockfile.Name + " even when there is one"},
	}, registryFlags()...)...)
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
		return cliflags.UsageError(c, "pull takes one REF (REGISTRY/REPOSITORY:TAG or @sha256:DIGEST)")
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
	lockPath := filepath.Join(dir, lockfile.Name)
	var pinned []string
	if c.Bool("no-lock") {
		err = p.Install()
	} else {
		cfg, cerr := hostflags.Config(c)
		if cerr != nil {
			return cerr
		}
		cfg.Dir = p.StageDir() // the plugin is started once to digest its functions
		pinned, err = host.InstallPinned(c.Context, cfg, lockPath, p.Sources(repo.Reference.String()), p.Install)
	}
	if err != nil {
		return cli.Exit("pull: "+err.Error(), 1)
	}
	fmt.Fprintf(c.App.Writer, "pulled %s@%s into %s in %v: %s\n", repo.Reference, p.Manifest.Digest, dir, fetched.Round(time.Millisecond), ociplugin.Describe(p.Files, p.Platform))
	if len(pinned) > 0 {
		fmt.Fprintf(c.App.Writer, "pinned in %s: %s\n", lockPath, strings.Join(pinned, ", "))
	}
	return nil
}
