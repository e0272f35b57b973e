package opscmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/cmd/opentool-host/internal/cliflags"
	"github.com/opentool-host/opentool-host/cmd/opentool-host/internal/hostflags"
	"github.com/opentool-host/opentool-host/frontend/keyview"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/internal/version"
	"github.com/opentool-host/opentool-host/protocol/export"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// List is "opentool-host list": the plugins and their functions, from
// plugins it starts (--dir) or a running host (--url), as a table or
// JSON (--json).
func List() *cli.Command {
	flags := append([]cli.Flag{
		&cli.BoolFlag{Name: "json", Usage: "print JSON instead of a table"},
	}, sourceFlags(false)...)
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
	var l keyview.Listing
	err := fromSource(c, func(url, apiKey string) (err error) {
		if l, err = keyview.FetchListing(c.Context, url, apiKey); err != nil {
			return cli.Exit(err.Error(), 1)
		}
		return nil
	}, func(h *host.Host) error { l = keyview.ListingOf(h); return nil })
	if err != nil {
		return err
	}
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(l)
	}
	l.WriteTable(c.App.Writer)
	return nil
}

// Export is "opentool-host export --format FORMAT": every served
// function as LLM API tool definitions (package export), from --dir or
// --url, as indented JSON on stdout; the functions a format cannot take
// as they are are named on stderr.
func Export() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "format", Aliases: []string{"f"},
			Usage: "`FORMAT` of the tool definitions: openai (Responses API), openai-chat (Chat Completions), anthropic or opentool (the document)"},
		&cli.BoolFlag{Name: "strict", Usage: "rewrite for OpenAI strict mode (openai, openai-chat); functions it cannot apply to are exported non-strict and named on stderr"},
		&cli.BoolFlag{Name: "defer-loading", Usage: "with --format anthropic or openai (the Responses API): the provider's tool search tool first, then every tool with \"defer_loading\": true, so that the model sees only the tools it searches for"},
	}
	flags = append(flags, sourceFlags(false)...)
	return &cli.Command{
		Name:  "export",
		Usage: "print every served function as LLM API tool definitions (from --dir, or a running host with --url)",
		UsageText: "opentool-host export --format openai|openai-chat|anthropic|opentool [--strict] --dir plugins\n" +
			"   opentool-host export --format openai --url http://127.0.0.1:9627",
		Description: "Prints a JSON array of tool definitions, ready for the \"tools\" of an API request (or, for\n" +
			"opentool, the aggregated OpenTool document). Parameters become one JSON Schema object. With\n" +
			"--strict, each function OpenAI strict mode cannot take is exported with \"strict\": false and\n" +
			"named on stderr. Streaming functions are included: run them with streamCall.",
		Flags:  flags,
		Action: exportAction,
	}
}

func exportAction(c *cli.Context) error {
	if c.String("format") == "" {
		return cliflags.UsageError(c, "export: give --format openai, openai-chat, anthropic or opentool")
	}
	if err := checkSource(c); err != nil {
		return err
	}
	format, err := export.ParseFormat(c.String("format"))
	if err != nil {
		return cli.Exit("export: "+strings.TrimPrefix(err.Error(), "export: "), 2)
	}
	opts := export.Options{Format: format, Strict: c.Bool("strict"), DeferLoading: c.Bool("defer-loading")}
	if opts.Strict && format != export.OpenAI && format != export.OpenAIChat {
		return cli.Exit("export: --strict applies only to --format openai and openai-chat", 2)
	}
	if opts.DeferLoading && format != export.Anthropic && format != export.OpenAI {
		return cli.Exit("export: --defer-loading applies only to --format anthropic and openai (Chat Completions has no tool search)", 2)
	}
	var doc *opentool.OpenTool
	err = fromSource(c, func(url, apiKey string) (err error) {
		if doc, err = keyview.FetchDocument(c.Context, url, apiKey); err != nil {
			return cli.Exit("export: "+err.Error(), 1)
		}
		return nil
	}, func(h *host.Host) error { doc = h.Document("opentool-host", version.Version, ""); return nil })
	if err != nil {
		return err
	}
	out, issues, err := export.Export(doc, opts)
	if err != nil {
		return cli.Exit(err.Error(), 1)
	}
	for _, is := range issues {
		fmt.Fprintln(c.App.ErrWriter, "opentool-host: export:", is.String())
	}
	var b bytes.Buffer
	if err := json.Indent(&b, out, "", "  "); err != nil {
		return cli.Exit("export: "+err.Error(), 1)
	}
	b.WriteByte('\n')
	_, err = c.App.Writer.Write(b.Bytes())
	return err
}

// sourceFlags are the flags of commands that read the functions either
// from plugins they start (--dir) or from a running host (--url); calls
// says whether the command calls a function (hostflags.LocalFlags).
func sourceFlags(calls bool) []cli.Flag {
	return hostflags.LocalFlags("warn", calls,
		hostflags.DirFlag(false),
		&cli.StringFlag{Name: "url", Usage: "base `URL` of a running host (e.g. http://127.0.0.1:9627) instead of --dir"},
		&cli.StringFlag{Name: "api-key", Usage: "with --url: send `KEY` as \"Authorization: Bearer KEY\""},
	)
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

// startHost starts a host on --dir without watching, for list, call
// and export.
func startHost(c *cli.Context) (*host.Host, error) {
	cfg, err := hostflags.Config(c)
	if err != nil {
		return nil, err
	}
	h, err := host.NewStarted(c.Context, cfg)
	if err != nil {
		return nil, cli.Exit(err.Error(), 1)
	}
	return h, nil
}

// fromSource runs remote with --url and --api-key, or local with a host
// started on --dir (closed when local returns). Errors (exit 2): neither
// --url nor --dir is given.
func fromSource(c *cli.Context, remote func(url, apiKey string) error, local func(*host.Host) error) error {
	switch {
	case c.String("url") != "":
		return remote(c.String("url"), c.String("api-key"))
	case c.String("dir") != "":
		h, err := startHost(c)
		if err != nil {
			return err
		}
		defer h.Close(context.Background())
		return local(h)
	}
	return cli.Exit(c.Command.Name+": give --dir DIR or --url URL", 2)
}
