package keyview

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/opentool-host/opentool-host/client"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// Listing is what `opentool-host list` prints: the plugins with their
// state and the served functions with the plugin that serves each.
type Listing struct {
	Plugins   []supervise.PluginStatus `json:"plugins"`
	Functions []ListedFunction         `json:"functions"`
	// Ignored are the plugins folder's files named like plugins that
	// cannot be run, with the reason.
	Ignored []host.IgnoredFile `json:"ignored,omitempty"`
}

// ListedFunction is one served function of a Listing.
type ListedFunction struct {
	// Plugin serves the function; host.BuiltinOwner for the host's own.
	Plugin      string `json:"plugin"`
	Function    string `json:"function"`
	Description string `json:"description"`
}

// ListingOf is the whole listing of src (the operator's view).
func ListingOf(src Source) Listing {
	l := Listing{Plugins: src.Plugins()}
	if ig, ok := src.(interface{ Ignored() []host.IgnoredFile }); ok {
		l.Ignored = ig.Ignored()
	}
	for _, f := range src.Functions() {
		owner := f.Plugin
		if f.Builtin {
			owner = host.BuiltinOwner
		}
		l.Functions = append(l.Functions, ListedFunction{Plugin: owner, Function: f.Function.Name, Description: f.Function.Description})
	}
	return l
}

// FetchListing reads the listing of the running host at base (e.g.
// http://127.0.0.1:9627; a trailing /opentool is ignored) as apiKey
// ("" for none) sees it: GET /health and the OpenTool document, within
// 10 s. Errors: the host is unreachable, or answers other than 200.
func FetchListing(ctx context.Context, base, apiKey string) (Listing, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	var health struct {
		Plugins []supervise.PluginStatus `json:"plugins"`
		Ignored []host.IgnoredFile       `json:"ignored"`
	}
	if err := getJSON(ctx, hostBase(base)+"/health", apiKey, &health); err != nil {
		return Listing{}, err
	}
	doc, err := FetchDocument(ctx, base, apiKey)
	if err != nil {
		return Listing{}, err
	}
	return Listing{Plugins: health.Plugins, Functions: served(doc, health.Plugins), Ignored: health.Ignored}, nil
}

// FetchDocument reads the aggregated OpenTool document of the running
// host at base (as FetchListing: a trailing /opentool is ignored) as
// apiKey ("" for none) sees it, through the Go client SDK, within 10 s.
// Errors: the client's (*client.UnauthorizedError, ...).
func FetchDocument(ctx context.Context, base, apiKey string) (*opentool.OpenTool, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	return HostClient(base, apiKey).Load(ctx)
}

// HostClient is the Go client SDK's client of the OpenTool API of the
// running host at base (e.g. http://127.0.0.1:9627; a trailing /opentool
// is ignored), sending apiKey ("" for none) as a Bearer token.
func HostClient(base, apiKey string) *client.Client {
	return client.New(client.WithBaseURL(hostBase(base)+"/opentool"), client.WithAPIKey(apiKey))
}

// fetchTimeout bounds FetchListing and FetchDocument.
const fetchTimeout = 10 * time.Second

// hostBase is the URL of a running host without a trailing "/" or
// "/opentool" (the OpenTool API's base path).
func hostBase(url string) string {
	return strings.TrimSuffix(strings.TrimSuffix(url, "/"), "/opentool")
}

// served pairs each function of the served document with the plugin
// that serves it: the plugin that declares the name, unless /health
// lists the name among its conflicts (another plugin owns it); a
// duplicate served under a prefix ("PLUGIN__NAME") is its plugin's. A
// function no plugin serves is the host's own (tool search's, owned by
// host.BuiltinOwner).
func served(doc *opentool.OpenTool, plugins []supervise.PluginStatus) []ListedFunction {
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
	var out []ListedFunction
	if doc != nil {
		for _, f := range doc.Functions {
			p, ok := owner[f.Name]
			if !ok {
				p = host.BuiltinOwner
			}
			out = append(out, ListedFunction{Plugin: p, Function: f.Name, Description: f.Description})
		}
	}
	return out
}

// getJSON decodes the JSON body of GET url, sending apiKey as a Bearer
// token when not empty. Errors: the request failed or the status is not
// 200.
func getJSON(ctx context.Context, url, apiKey string, v any) error {
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

// WriteTable writes l as aligned tables: the functions, then the plugins
// with their state, pid, restarts, function count, last error and name
// conflicts, then each plugin's next step whole (NEXT STEPS, when a
// failed start has one), then the files named like plugins that are not
// served, with the reason (each cell on one line, at most 160
// characters).
func (l Listing) WriteTable(w io.Writer) {
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
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\n", p.Name, p.State, p.PID, p.Restarts, len(p.Functions), oneLine(reason(p)))
	}
	tw.Flush()
	l.writeNextSteps(w)
	if len(l.Ignored) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NOT SERVED\tREASON")
		for _, f := range l.Ignored {
			fmt.Fprintf(tw, "%s\t%s\n", f.File, oneLine(f.Reason))
		}
		tw.Flush()
	}
}

// writeNextSteps writes, under NEXT STEPS, each plugin's next step whole
// ("envpy: the interpreter of the script's #! line ... cannot import
// grpc: install ..."), which its REASON cell may cut: the part of its last
// error after "; next: " (host's start hints). Nothing when no plugin has
// one.
func (l Listing) writeNextSteps(w io.Writer) {
	var steps []string
	for _, p := range l.Plugins {
		if _, step, ok := strings.Cut(p.LastError, "; next: "); ok {
			steps = append(steps, p.Name+": "+strings.Join(strings.Fields(step), " "))
		}
	}
	if len(steps) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "NEXT STEPS")
	for _, s := range steps {
		fmt.Fprintln(w, s)
	}
}

// reason is the REASON cell of plugin p: its last error, then each of
// its function name conflicts ("function repeat is owned by notes;
// served as mine__repeat"), joined by "; ".
func reason(p supervise.PluginStatus) string {
	var parts []string
	if p.LastError != "" {
		parts = append(parts, p.LastError)
	}
	for _, c := range p.Conflicts {
		parts = append(parts, c.String())
	}
	return strings.Join(parts, "; ")
}

// oneLine is s on one line, cut to 160 characters.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}
