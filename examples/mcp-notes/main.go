// Command mcp-notes is a small MCP server (the official Go SDK, stdio)
// that works offline: the example of an MCP server run by opentool-host
// from a declaration (plugins/notes.mcp.json), and the server the
// adapter's tests run.
//
// Tools:
//
//	add_note {title, body?}  → the note {id, title, body} (structured); an empty
//	                           title is JSON-RPC error -32602 (invalid params)
//	list_notes               → {notes: [...]}
//	get_note {id}            → the note; isError "no note N" when there is none
//	repeat {text}            → one text block (no structured content)
//	slow {ms}                sleeps ms milliseconds, honouring cancellation
//	stats                    → {active, cancelled}: sleeps in flight, and those
//	                           ended by notifications/cancelled
//
// Test hooks (flags):
//
//	--hang-initialize     read stdin and never answer anything, ignoring its end
//	--add-tool-after D    add tool "late" D after start (the SDK then sends
//	                      notifications/tools/list_changed)
//	--odd-tools           add "ns.tool/with spaces" (a name OpenTool does not
//	                      allow) and "all_of" (an input schema OpenTool cannot
//	                      express)
//	--exit-after D        exit with status 3 D after start
//	--page-size N         tools/list pages of N tools
//	--env-tool            add getenv {name} → {value, set, cwd}
//	--schema-tools        add tools whose schemas OpenTool cannot express,
//	                      each returning its arguments as one text block (no
//	                      check of its own: what reaches it is what the host
//	                      let through): "choose" {flag: boolean or string},
//	                      "contact" (allOf/anyOf, $defs/$ref/$anchor,
//	                      if/then/else, additionalProperties false),
//	                      "bounded" {n: integer 1..100, default 5} with a
//	                      title, annotations, an icon and _meta, and
//	                      "bad_input", whose inputSchema tools/list reports
//	                      as {"type":"string"} (not an object: refused)
//	--rich                add what MCP carries beyond a result object (rich.go):
//	                      content blocks of every kind, progress and log
//	                      messages, sampling, elicitation and roots requests,
//	                      resources, resource templates, prompts, completion
//
// It logs one line to stderr when it starts.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Note is one stored note.
type Note struct {
	ID    int    `json:"id"`
	Title string `json:"title"`
	Body  string `json:"body,omitempty"`
}

// notes is the server's state.
type notes struct {
	mu    sync.Mutex
	byID  map[int]Note
	next  int
	sleep struct{ active, cancelled atomic.Int64 }
	onAdd func(Note) // with --rich: the note becomes a resource (rich.go)
}

type addIn struct {
	Title string `json:"title" jsonschema:"the note's title, not empty"`
	Body  string `json:"body,omitempty" jsonschema:"the note's text"`
}

type idIn struct {
	ID int `json:"id" jsonschema:"the note's id"`
}

type slowIn struct {
	MS int `json:"ms" jsonschema:"milliseconds to sleep"`
}

type repeatIn struct {
	Text string `json:"text" jsonschema:"the text to return"`
}

type envIn struct {
	Name string `json:"name" jsonschema:"an environment variable"`
}

type envOut struct {
	Value string `json:"value"`
	Set   bool   `json:"set"`
	Cwd   string `json:"cwd"`
}

type listOut struct {
	Notes []Note `json:"notes"`
}

type statsOut struct {
	Active    int64 `json:"active"`
	Cancelled int64 `json:"cancelled"`
}

func (n *notes) add(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, Note, error) {
	if in.Title == "" {
		return nil, Note{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "title must not be empty"}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.next++
	note := Note{ID: n.next, Title: in.Title, Body: in.Body}
	n.byID[note.ID] = note
	if n.onAdd != nil {
		n.onAdd(note)
	}
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
	t := time.NewTimer(time.Duration(in.MS) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil, statsOut{}, nil
	case <-ctx.Done():
		n.sleep.cancelled.Add(1)
		return nil, statsOut{}, ctx.Err()
	}
}

func (n *notes) stats(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, statsOut, error) {
	return nil, statsOut{Active: n.sleep.active.Load(), Cancelled: n.sleep.cancelled.Load()}, nil
}

func repeat(_ context.Context, _ *mcp.CallToolRequest, in repeatIn) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
}

func getenv(_ context.Context, _ *mcp.CallToolRequest, in envIn) (*mcp.CallToolResult, envOut, error) {
	v, ok := os.LookupEnv(in.Name)
	wd, err := os.Getwd()
	return nil, envOut{Value: v, Set: ok, Cwd: wd}, err
}

// flags are the test hooks.
type flags struct {
	hang      bool
	addAfter  time.Duration
	odd       bool
	exitAfter time.Duration
	pageSize  int
	envTool   bool
	schemas   bool
	rich      bool
}

func parseFlags() flags {
	var f flags
	flag.BoolVar(&f.hang, "hang-initialize", false, "never answer initialize")
	flag.DurationVar(&f.addAfter, "add-tool-after", 0, "add tool \"late\" after this long")
	flag.BoolVar(&f.odd, "odd-tools", false, "add tools OpenTool cannot take as they are")
	flag.DurationVar(&f.exitAfter, "exit-after", 0, "exit with status 3 after this long")
	flag.IntVar(&f.pageSize, "page-size", 0, "tools/list page size (0: the SDK's default)")
	flag.BoolVar(&f.envTool, "env-tool", false, "add the getenv tool")
	flag.BoolVar(&f.schemas, "schema-tools", false, "add tools with JSON Schemas OpenTool cannot express")
	flag.BoolVar(&f.rich, "rich", false, "add content blocks, messages, requests, resources, prompts and completion (rich.go)")
	flag.Parse()
	return f
}

// hang reads and drops stdin and never answers, even after stdin ends.
func hang() {
	go func() { _, _ = io.Copy(io.Discard, os.Stdin) }()
	time.Sleep(math.MaxInt64)
}

// addOddTools adds a tool named against OpenTool's rule and one whose
// schema OpenTool cannot express.
func addOddTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "ns.tool/with spaces", Description: "A name OpenTool does not allow."}, repeat)
	s.AddTool(&mcp.Tool{Name: "all_of", Description: "A schema OpenTool cannot express.", InputSchema: map[string]any{
		"type": "object", "required": []any{"x"},
		"properties": map[string]any{"x": map[string]any{"allOf": []any{map[string]any{"type": "string"}}}},
	}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{}}, nil
	})
}

// contactSchema is the input schema of "contact": the JSON Schema 2020-12
// features of the MCP conformance suite's json_schema_2020_12_tool.
const contactSchema = `{
	"$schema": "https://json-schema.org/draft/2020-12/schema",
	"type": "object",
	"$defs": {"address": {"$anchor": "addressDef", "type": "object",
		"properties": {"street": {"type": "string"}, "city": {"type": "string", "minLength": 2}}, "required": ["city"]}},
	"properties": {
		"name": {"type": "string", "title": "Name"},
		"address": {"$ref": "#/$defs/address"},
		"contactMethod": {"type": "string", "enum": ["phone", "email"]},
		"phone": {"type": "string", "pattern": "^[0-9+ ]+$"},
		"email": {"type": "string", "format": "email"}
	},
	"allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
	"if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
	"then": {"required": ["phone"]},
	"else": {"required": ["email"]},
	"additionalProperties": false
}`

// addSchemaTools adds the tools of --schema-tools.
func addSchemaTools(s *mcp.Server) {
	echoArgs := func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
	}
	s.AddTool(&mcp.Tool{Name: "choose", Description: "Takes a flag that is a boolean or a string.", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"flag":{"type":["boolean","string"],"description":"yes, no, or a word"}},"required":["flag"],"additionalProperties":false}`)}, echoArgs)
	s.AddTool(&mcp.Tool{Name: "contact", Description: "Takes a contact (JSON Schema 2020-12 features).", InputSchema: json.RawMessage(contactSchema)}, echoArgs)
	closed, safe := false, false
	s.AddTool(&mcp.Tool{
		Name: "bounded", Title: "Bounded number", Description: "Takes a number from 1 to 100.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: &safe, OpenWorldHint: &closed},
		Icons:       []mcp.Icon{{Source: "data:image/png;base64,iVBORw0KGgo=", MIMEType: "image/png", Sizes: []string{"16x16"}}},
		Meta:        mcp.Meta{"example.com/tier": "free"},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":100,"default":5}},"required":["n"]}`),
	}, echoArgs)
	s.AddTool(&mcp.Tool{Name: "bad_input", Description: "Listed with an input schema that is not an object.", InputSchema: json.RawMessage(`{"type":"object"}`)}, echoArgs)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				for i, t := range lr.Tools {
					if t.Name == "bad_input" {
						bad := *t
						bad.InputSchema = json.RawMessage(`{"type":"string"}`)
						lr.Tools[i] = &bad
					}
				}
			}
			return res, err
		}
	})
}

func main() {
	f := parseFlags()
	log.SetFlags(0)
	log.SetOutput(os.Stderr)
	if f.hang {
		log.Print("mcp-notes: never answering (--hang-initialize)")
		hang()
	}
	if f.exitAfter > 0 {
		time.AfterFunc(f.exitAfter, func() { os.Exit(3) })
	}
	n := &notes{byID: map[int]Note{}}
	opts := &mcp.ServerOptions{PageSize: f.pageSize}
	var r *rich
	if f.rich {
		r = newRich(n)
		r.options(opts)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "mcp-notes", Version: "1.0.0"}, opts)
	if r != nil {
		r.add(s)
	}
	mcp.AddTool(s, &mcp.Tool{Name: "add_note", Description: "Stores a note and returns it with its id."}, n.add)
	mcp.AddTool(s, &mcp.Tool{Name: "list_notes", Description: "Lists the notes.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, n.list)
	mcp.AddTool(s, &mcp.Tool{Name: "get_note", Description: "Returns one note by id.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, n.get)
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Sleeps ms milliseconds, honouring cancellation."}, n.slow)
	mcp.AddTool(s, &mcp.Tool{Name: "stats", Description: "Sleeps in flight and cancelled."}, n.stats)
	mcp.AddTool(s, &mcp.Tool{Name: "repeat", Description: "Returns its text as a text block.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, repeat)
	if f.envTool {
		mcp.AddTool(s, &mcp.Tool{Name: "getenv", Description: "Returns an environment variable and the working directory."}, getenv)
	}
	if f.odd {
		addOddTools(s)
	}
	if f.schemas {
		addSchemaTools(s)
	}
	if f.addAfter > 0 {
		time.AfterFunc(f.addAfter, func() {
			mcp.AddTool(s, &mcp.Tool{Name: "late", Description: "Added while running."}, repeat)
		})
	}
	log.Print("mcp-notes: serving MCP on stdio")
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil && !errors.Is(err, io.EOF) {
		log.Printf("mcp-notes: %v", err)
	}
}
