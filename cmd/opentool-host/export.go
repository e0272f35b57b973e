package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/export"
	"github.com/opentool-host/opentool-host/internal/version"
	"github.com/opentool-host/opentool-host/opentool"
)

func exportCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "format", Aliases: []string{"f"},
			Usage: "`FORMAT` of the tool definitions: openai (Responses API), openai-chat (Chat Completions), anthropic or opentool (the document)"},
		&cli.BoolFlag{Name: "strict", Usage: "rewrite for OpenAI strict mode (openai, openai-chat); functions it cannot apply to are exported non-strict and named on stderr"},
		&cli.BoolFlag{Name: "defer-loading", Usage: "with --format anthropic: Anthropic's tool search tool first, then every tool with \"defer_loading\": true, so that the model sees only the tools it searches for"},
	}
	flags = append(flags, sourceFlags()...)
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
		return usageError(c, "export: give --format openai, openai-chat, anthropic or opentool")
	}
	if err := checkSource(c); err != nil {
		return err
	}
	format, err := export.ParseFormat(c.String("format"))
	if err != nil {
		return cli.Exit("export: "+strings.TrimPrefix(err.Error(), "export: "), 2)
	}
	strict := c.Bool("strict")
	if strict && format != export.OpenAI && format != export.OpenAIChat {
		return cli.Exit("export: --strict applies only to --format openai and openai-chat", 2)
	}
	var doc *opentool.OpenTool
	switch {
	case c.String("url") != "":
		if doc, err = remoteLoad(c); err != nil {
			return cli.Exit("export: "+err.Error(), 1)
		}
	case c.String("dir") != "":
		h, err := startHost(c)
		if err != nil {
			return err
		}
		defer h.Close(context.Background())
		doc = h.Document("opentool-host", version.Version, "")
	default:
		return cli.Exit("export: give --dir DIR or --url URL", 2)
	}
	if c.Bool("defer-loading") && format != export.Anthropic {
		return cli.Exit("export: --defer-loading applies only to --format anthropic", 2)
	}
	out, issues, err := export.Document(doc, format, strict)
	if err == nil && c.Bool("defer-loading") {
		out, err = export.Deferred(doc)
	}
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
