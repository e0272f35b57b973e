package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/catalog"
	"github.com/opentool-host/opentool-host/client"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/httpapi"
	"github.com/opentool-host/opentool-host/opentool"
)

func listCommand() *cli.Command {
	flags := append([]cli.Flag{
		&cli.BoolFlag{Name: "json", Usage: "print JSON instead of a table"},
	}, sourceFlags()...)
	return &cli.Command{
		Name:      "list",
		Usage:     "list plugins and their functions (from --dir, or from a running host with --url)",
		UsageText: "opentool-host list --dir plugins\n   opentool-host list --url http://127.0.0.1:9627",
		Flags:     flags,
		Action:    listAction,
	}
}

func listAction(c *cli.Context) error {
	if err := checkSource(c); err != nil {
		return err
	}
	var l catalog.Listing
	switch {
	case c.String("url") != "":
		var err error
		if l, err = catalog.FetchListing(c.Context, c.String("url"), c.String("api-key")); err != nil {
			return cli.Exit(err.Error(), 1)
		}
	case c.String("dir") != "":
		h, err := startHost(c)
		if err != nil {
			return err
		}
		defer h.Close(context.Background())
		l = catalog.ListingOf(h)
	default:
		return cli.Exit("list: give --dir DIR or --url URL", 2)
	}
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(l)
	}
	l.WriteTable(c.App.Writer)
	return nil
}

// sourceFlags are the flags of commands that read the functions either
// from plugins they start (--dir) or from a running host (--url).
func sourceFlags() []cli.Flag {
	flags := []cli.Flag{
		dirFlag(false),
		&cli.StringFlag{Name: "url", Usage: "base `URL` of a running host (e.g. http://127.0.0.1:9627) instead of --dir"},
		&cli.StringFlag{Name: "api-key", Usage: "with --url: send `KEY` as \"Authorization: Bearer KEY\""},
	}
	flags = append(flags, hostFlags()...)
	return append(flags, logFlags("warn")...)
}

// checkSource refuses --dir together with --url: the command would read
// either the plugins it starts or a running host, and which one was meant
// is not clear. --dir also comes from OPENTOOL_PLUGIN_DIR; the message says
// so when that is where it came from.
func checkSource(c *cli.Context) error {
	if c.String("dir") == "" || c.String("url") == "" {
		return nil
	}
	from := ""
	if env, ok := os.LookupEnv("OPENTOOL_PLUGIN_DIR"); ok && env == c.String("dir") {
		from = " (--dir may come from OPENTOOL_PLUGIN_DIR)"
	}
	return cli.Exit(fmt.Sprintf("%s: --dir and --url are both given%s; give one: --dir starts the plugins, --url reads a running host", c.Command.Name, from), 2)
}

// remoteLoad reads the aggregated document of the host at --url (with
// --api-key) through the Go client SDK, within 10 s.
func remoteLoad(c *cli.Context) (*opentool.OpenTool, error) {
	ctx, cancel := context.WithTimeout(c.Context, 10*time.Second)
	defer cancel()
	base := strings.TrimSuffix(strings.TrimSuffix(c.String("url"), "/"), httpapi.BasePath)
	return client.New(client.WithBaseURL(base+httpapi.BasePath), client.WithAPIKey(c.String("api-key"))).Load(ctx)
}

// startHost starts a host on --dir without watching, for list and call.
func startHost(c *cli.Context) (*host.Host, error) {
	cfg, err := hostConfig(c)
	if err != nil {
		return nil, err
	}
	h, err := newHost(cfg)
	if err != nil {
		return nil, cli.Exit(err.Error(), 1)
	}
	if err := h.Start(c.Context); err != nil {
		_ = h.Close(context.Background())
		return nil, cli.Exit(err.Error(), 1)
	}
	return h, nil
}
