package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

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

// listing is what list prints: plugins with their state and the served
// functions with the plugin that serves each.
type listing struct {
	Plugins   []host.PluginStatus `json:"plugins"`
	Functions []listedFunction    `json:"functions"`
}

type listedFunction struct {
	Plugin      string `json:"plugin"`
	Function    string `json:"function"`
	Description string `json:"description"`
}

func listAction(c *cli.Context) error {
	if err := checkSource(c); err != nil {
		return err
	}
	var l listing
	switch {
	case c.String("url") != "":
		var err error
		if l, err = listFromURL(c); err != nil {
			return cli.Exit(err.Error(), 1)
		}
	case c.String("dir") != "":
		h, err := startHost(c)
		if err != nil {
			return err
		}
		defer h.Close(context.Background())
		l.Plugins = h.Plugins()
		for _, f := range h.Functions() {
			l.Functions = append(l.Functions, listedFunction{Plugin: f.Plugin, Function: f.Function.Name, Description: f.Function.Description})
		}
	default:
		return cli.Exit("list: give --dir DIR or --url URL", 2)
	}
	if c.Bool("json") {
		enc := json.NewEncoder(c.App.Writer)
		enc.SetIndent("", "  ")
		return enc.Encode(l)
	}
	printListing(c.App.Writer, l)
	return nil
}

func printListing(w io.Writer, l listing) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLUGIN\tFUNCTION\tDESCRIPTION")
	for _, f := range l.Functions {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Plugin, f.Function, oneLine(f.Description))
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLUGIN\tSTATE\tPID\tRESTARTS\tFUNCTIONS\tREASON")
	for _, p := range l.Plugins {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\n", p.Name, p.State, p.PID, p.Restarts, len(p.Functions), oneLine(p.LastError))
	}
	tw.Flush()
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
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

// listFromURL reads GET /health and the document of a running host.
func listFromURL(c *cli.Context) (listing, error) {
	base := strings.TrimSuffix(strings.TrimSuffix(c.String("url"), "/"), httpapi.BasePath)
	var l listing
	var health httpapi.Health
	if err := getJSON(c.Context, base+"/health", c.String("api-key"), &health); err != nil {
		return l, err
	}
	l.Plugins = health.Plugins
	doc, err := remoteLoad(c)
	if err != nil {
		return l, err
	}
	l.Functions = servedFunctions(doc, health.Plugins)
	return l, nil
}

// servedFunctions pairs each function of the served document with the
// plugin that serves it: the plugin that declares the name, unless /health
// lists the name among its conflicts (another plugin owns it); a
// duplicate served under a prefix ("PLUGIN__NAME") is its plugin's.
func servedFunctions(doc *opentool.OpenTool, plugins []host.PluginStatus) []listedFunction {
	owner := map[string]string{}
	for _, p := range plugins {
		refused := map[string]bool{}
		for _, c := range p.Conflicts {
			refused[c.Function] = true
			if c.ServedAs != "" {
				owner[c.ServedAs] = p.Name
			}
		}
		for _, f := range p.Functions {
			if !refused[f] {
				owner[f] = p.Name
			}
		}
	}
	var out []listedFunction
	if doc != nil {
		for _, f := range doc.Functions {
			out = append(out, listedFunction{Plugin: owner[f.Name], Function: f.Name, Description: f.Description})
		}
	}
	return out
}

// getJSON decodes the JSON body of GET url, sending apiKey as a Bearer
// token when not empty.
func getJSON(ctx context.Context, url, apiKey string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
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
