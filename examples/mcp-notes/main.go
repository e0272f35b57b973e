// Command mcp-notes is a small MCP server (the official Go SDK, stdio)
// that works offline: the example of an MCP server run by opentool-host
// from a declaration (plugins/notes.mcp.json), and the server the
// adapter's tests run.
//
// Tools: add_note {title, body} → {id, title}; list_notes → {notes};
// get_note {id} → the note (isError when there is none); echo {text};
// slow {ms} sleeps, honouring cancellation; stats → {active, cancelled}
// (sleeps in flight and those ended by notifications/cancelled).
//
// Test hooks (flags): --hang-initialize never answers initialize;
// --add-tool-after D adds tool "late" D after start (the SDK then sends
// notifications/tools/list_changed); --odd-tools adds a tool whose name
// OpenTool does not allow ("ns.tool/with spaces") and one whose input
// schema OpenTool cannot express (allOf); --exit-after D exits with
// status 3 D after start.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Note is one stored note.
type Note struct {
	ID    int    `json:"id"`
	Title string `json:"title"`
	Body  string `json:"body,omitempty"`
}

type notes struct {
	mu    sync.Mutex
	byID  map[int]Note
	next  int
	sleep struct{ active, cancelled atomic.Int64 }
}

type addIn struct {
	Title string `json:"title" jsonschema:"the note's title"`
	Body  string `json:"body,omitempty" jsonschema:"the note's text"`
}

type idIn struct {
	ID int `json:"id" jsonschema:"the note's id"`
}

type slowIn struct {
	MS int `json:"ms" jsonschema:"milliseconds to sleep"`
}

type echoIn struct {
	Text string `json:"text"`
}

type listOut struct {
	Notes []Note `json:"notes"`
}

type statsOut struct {
	Active    int64 `json:"active"`
	Cancelled int64 `json:"cancelled"`
}

func (n *notes) add(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, Note, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.next++
	note := Note{ID: n.next, Title: in.Title, Body: in.Body}
	n.byID[note.ID] = note
	return nil, note, nil
}

func (n *notes) list(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, listOut, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := listOut{Notes: []Note{}}
	for _, note := range n.byID {
		out.Notes = append(out.Notes, note)
	}
	sort.Slice(out.Notes, func(i, j int) bool { return out.Notes[i].ID < out.Notes[j].ID })
	return nil, out, nil
}

func (n *notes) get(_ context.Context, _ *mcp.CallToolRequest, in idIn) (*mcp.CallToolResult, Note, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	note, ok := n.byID[in.ID]
	if !ok {
		return nil, Note{}, fmt.Errorf("no note %d", in.ID)
	}
	return nil, note, nil
}

func (n *notes) slow(ctx context.Context, _ *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, statsOut, error) {
	n.sleep.active.Add(1)
	defer n.sleep.active.Add(-1)
	select {
	case <-time.After(time.Duration(in.MS) * time.Millisecond):
		return nil, statsOut{}, nil
	case <-ctx.Done():
		n.sleep.cancelled.Add(1)
		return nil, statsOut{}, ctx.Err()
	}
}

func (n *notes) stats(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, statsOut, error) {
	return nil, statsOut{Active: n.sleep.active.Load(), Cancelled: n.sleep.cancelled.Load()}, nil
}

func echo(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
}

func main() {
	hang := flag.Bool("hang-initialize", false, "never answer initialize")
	addAfter := flag.Duration("add-tool-after", 0, "add tool \"late\" after this long")
	odd := flag.Bool("odd-tools", false, "add tools OpenTool cannot take as they are")
	exitAfter := flag.Duration("exit-after", 0, "exit with status 3 after this long")
	flag.Parse()
	log.SetOutput(os.Stderr)
	if *hang {
		select {} // reads nothing, answers nothing
	}
	if *exitAfter > 0 {
		time.AfterFunc(*exitAfter, func() { os.Exit(3) })
	}
	n := &notes{byID: map[int]Note{}}
	s := mcp.NewServer(&mcp.Implementation{Name: "mcp-notes", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add_note", Description: "Stores a note and returns it with its id."}, n.add)
	mcp.AddTool(s, &mcp.Tool{Name: "list_notes", Description: "Lists the notes.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, n.list)
	mcp.AddTool(s, &mcp.Tool{Name: "get_note", Description: "Returns one note by id."}, n.get)
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Sleeps ms milliseconds, honouring cancellation."}, n.slow)
	mcp.AddTool(s, &mcp.Tool{Name: "stats", Description: "Sleeps in flight and cancelled."}, n.stats)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Returns its text as a text block."}, echo)
	if *odd {
		mcp.AddTool(s, &mcp.Tool{Name: "ns.tool/with spaces", Description: "A name OpenTool does not allow."}, echo)
		s.AddTool(&mcp.Tool{Name: "all_of", Description: "A schema OpenTool cannot express.", InputSchema: map[string]any{
			"type": "object", "properties": map[string]any{"x": map[string]any{"allOf": []any{map[string]any{"type": "string"}}}},
		}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	if *addAfter > 0 {
		time.AfterFunc(*addAfter, func() {
			mcp.AddTool(s, &mcp.Tool{Name: "late", Description: "Added while running."}, echo)
		})
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Printf("mcp-notes: %v", err)
	}
}
