package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// With --rich the server offers what MCP carries beyond a result object,
// for the tests of opentool-host's lossless relay (every feature of MCP
// 2025-11-25 "Server Features" and "Client Features" a server uses):
//
// Tools:
//
//	snapshot                 → text, image, audio, resource_link and resource
//	                           blocks, each with annotations, and _meta
//	steps {n, delay_ms?}     sends n notifications/progress (when the call has
//	                         a progress token) and per step one
//	                         notifications/message at debug and one at info;
//	                         → "done N"
//	ask {question}           elicitation/create (form: {answer: string}),
//	                         sampling/createMessage (the question) and
//	                         roots/list to the client → structured {answer,
//	                         action, model, sample, roots}; a client request
//	                         that fails: isError naming it
//	touch {uri}              sends notifications/resources/updated for uri to
//	                         the sessions subscribed to it
//	roots                    the client's roots as a server that keeps them
//	                         does (the reference everything-server's
//	                         get-roots-list): asked with roots/list on first
//	                         use and kept for the session; asked again on
//	                         notifications/roots/list_changed, the answer
//	                         replacing them only when it succeeds →
//	                         structured {roots}; a failed first roots/list:
//	                         isError naming it
//
// Resources: notes://readme (text), notes://logo (blob, image/png); the
// template notes://note/{id} (a stored note as JSON), each note added
// also a resource of its own, notes://note/ID (the SDK then sends
// notifications/resources/list_changed); resources/subscribe.
// Prompt: summarize {topic, style?} (a user message naming them, and the
// readme embedded). Completion: the prompt's topic (from "notes", "news",
// "nothing") and the template's id (the stored ids).
type rich struct {
	n     *notes
	srv   *mcp.Server
	mu    sync.Mutex
	subs  map[string]int                  // subscribed URIs, from every session
	roots map[*mcp.ServerSession]rootsOut // kept roots, per session (the roots tool)
}

type rootsOut struct {
	Roots []string `json:"roots"`
}

func newRich(n *notes) *rich {
	r := &rich{n: n, subs: map[string]int{}, roots: map[*mcp.ServerSession]rootsOut{}}
	n.onAdd = func(note Note) {
		r.srv.AddResource(&mcp.Resource{URI: fmt.Sprintf("notes://note/%d", note.ID), Name: "note-" + strconv.Itoa(note.ID), Title: note.Title, MIMEType: "application/json"}, r.readNote)
	}
	return r
}

// pngBytes is a 1x1 PNG.
var pngBytes = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0x0d, 'I', 'H', 'D', 'R', 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89}

// wavBytes is the start of a WAV file.
var wavBytes = []byte("RIFF\x24\x00\x00\x00WAVEfmt ")

// readme is notes://readme's text.
const readme = "mcp-notes keeps notes in memory."

// options sets the completion and subscription handlers.
func (r *rich) options(o *mcp.ServerOptions) {
	o.CompletionHandler = r.complete
	o.SubscribeHandler = func(_ context.Context, req *mcp.SubscribeRequest) error {
		r.mu.Lock()
		r.subs[req.Params.URI]++
		r.mu.Unlock()
		return nil
	}
	o.RootsListChangedHandler = func(_ context.Context, req *mcp.RootsListChangedRequest) {
		// Asked again at once, as the everything-server does; not in
		// this handler, which the session's messages wait behind.
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, _ = r.syncRoots(ctx, req.Session)
		}()
	}
	o.UnsubscribeHandler = func(_ context.Context, req *mcp.UnsubscribeRequest) error {
		r.mu.Lock()
		if r.subs[req.Params.URI]--; r.subs[req.Params.URI] <= 0 {
			delete(r.subs, req.Params.URI)
		}
		r.mu.Unlock()
		return nil
	}
}

type stepsIn struct {
	N       int `json:"n" jsonschema:"how many steps"`
	DelayMS int `json:"delay_ms,omitempty" jsonschema:"milliseconds between steps"`
}

type askIn struct {
	Question string `json:"question" jsonschema:"what to ask"`
}

type askOut struct {
	Action string   `json:"action"`
	Answer string   `json:"answer,omitempty"`
	Model  string   `json:"model,omitempty"`
	Sample string   `json:"sample,omitempty"`
	Roots  []string `json:"roots"`
}

type touchIn struct {
	URI string `json:"uri" jsonschema:"the resource that changed"`
}

// readOnly annotates the tools that change nothing the server keeps
// (MCP "ToolAnnotations": readOnlyHint): a host may serve them to a
// client from a session another client uses.
var readOnly = &mcp.ToolAnnotations{ReadOnlyHint: true}

// add adds the tools, resources and prompt.
func (r *rich) add(s *mcp.Server) {
	r.srv = s
	mcp.AddTool(s, &mcp.Tool{Name: "snapshot", Description: "Returns one content block of every kind.", Annotations: readOnly}, r.snapshot)
	mcp.AddTool(s, &mcp.Tool{Name: "steps", Description: "Reports progress and logs while it works.", Annotations: readOnly}, r.steps)
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "Asks the client: elicitation, sampling, roots.", Annotations: readOnly}, r.ask)
	mcp.AddTool(s, &mcp.Tool{Name: "touch", Description: "Says a resource changed."}, r.touch)
	mcp.AddTool(s, &mcp.Tool{Name: "log_later", Description: "Logs n messages at level info after the call, delay_ms apart, then \"later done\" at level error."}, r.logLater)
	mcp.AddTool(s, &mcp.Tool{Name: "roots", Description: "Returns the client's roots, kept from the last roots/list."}, r.keptRoots)
	s.AddResource(&mcp.Resource{URI: "notes://readme", Name: "readme", Title: "Read me", MIMEType: "text/plain",
		Annotations: &mcp.Annotations{Audience: []mcp.Role{"user"}, Priority: 0.8}}, r.read)
	s.AddResource(&mcp.Resource{URI: "notes://logo", Name: "logo", MIMEType: "image/png"}, r.read)
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "notes://note/{id}", Name: "note", MIMEType: "application/json", Description: "A stored note."}, r.readNote)
	s.AddPrompt(&mcp.Prompt{Name: "summarize", Title: "Summarize", Description: "Asks for a summary of the notes on a topic.",
		Arguments: []*mcp.PromptArgument{{Name: "topic", Required: true}, {Name: "style"}}}, r.prompt)
}

func (r *rich) snapshot(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
	ann := &mcp.Annotations{Audience: []mcp.Role{"user", "assistant"}, Priority: 0.5, LastModified: "2025-01-02T03:04:05Z"}
	size := int64(len(readme))
	return &mcp.CallToolResult{
		Meta: mcp.Meta{"mcp-notes/kind": "snapshot"},
		Content: []mcp.Content{
			&mcp.TextContent{Text: "a snapshot", Annotations: ann},
			&mcp.ImageContent{Data: pngBytes, MIMEType: "image/png", Annotations: ann},
			&mcp.AudioContent{Data: wavBytes, MIMEType: "audio/wav", Annotations: ann},
			&mcp.ResourceLink{URI: "notes://readme", Name: "readme", Title: "Read me", MIMEType: "text/plain", Size: &size, Annotations: ann},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "notes://readme", MIMEType: "text/plain", Text: readme}, Annotations: ann},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "notes://logo", MIMEType: "image/png", Blob: pngBytes}},
		},
	}, nil, nil
}

func (r *rich) steps(ctx context.Context, req *mcp.CallToolRequest, in stepsIn) (*mcp.CallToolResult, any, error) {
	token := req.Params.GetProgressToken()
	for i := 1; i <= in.N; i++ {
		if in.DelayMS > 0 {
			time.Sleep(time.Duration(in.DelayMS) * time.Millisecond)
		}
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "debug", Logger: "steps", Data: fmt.Sprintf("step %d (debug)", i)})
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "steps", Data: map[string]any{"step": i}})
		if token != nil {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: float64(in.N), Message: fmt.Sprintf("step %d of %d", i, in.N)})
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("done %d", in.N)}}}, nil, nil
}

// logLater answers at once, then logs in.N messages outside any call,
// as a server logs what happens in its own time, and "later done" at
// level error.
func (r *rich) logLater(_ context.Context, req *mcp.CallToolRequest, in stepsIn) (*mcp.CallToolResult, any, error) {
	go func() {
		for i := 1; i <= in.N; i++ {
			time.Sleep(time.Duration(in.DelayMS) * time.Millisecond)
			_ = req.Session.Log(context.Background(), &mcp.LoggingMessageParams{Level: "info", Logger: "later", Data: fmt.Sprintf("later %d", i)})
		}
		_ = req.Session.Log(context.Background(), &mcp.LoggingMessageParams{Level: "error", Logger: "later", Data: "later done"})
	}()
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("will log %d", in.N)}}}, nil, nil
}

func (r *rich) ask(ctx context.Context, req *mcp.CallToolRequest, in askIn) (*mcp.CallToolResult, any, error) {
	// The SDK's error names the request ("calling \"elicitation/create\": ...").
	fail := func(err error) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil, nil
	}
	er, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: in.Question, RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}, "required": []any{"answer"}}})
	if err != nil {
		return fail(err)
	}
	out := askOut{Action: er.Action, Roots: []string{}}
	if a, ok := er.Content["answer"].(string); ok {
		out.Answer = a
	}
	cr, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 50,
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Question}}}})
	if err != nil {
		return fail(err)
	}
	out.Model = cr.Model
	if tc, ok := cr.Content.(*mcp.TextContent); ok {
		out.Sample = tc.Text
	}
	rr, err := req.Session.ListRoots(ctx, nil)
	if err != nil {
		return fail(err)
	}
	for _, root := range rr.Roots {
		out.Roots = append(out.Roots, root.URI)
	}
	return nil, out, nil
}

func (r *rich) keptRoots(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	r.mu.Lock()
	out, ok := r.roots[req.Session]
	r.mu.Unlock()
	if ok {
		return nil, out, nil
	}
	out, err := r.syncRoots(ctx, req.Session)
	if err != nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil, nil
	}
	return nil, out, nil
}

// syncRoots asks ss for its roots and keeps them when it answers.
func (r *rich) syncRoots(ctx context.Context, ss *mcp.ServerSession) (rootsOut, error) {
	rr, err := ss.ListRoots(ctx, nil)
	if err != nil {
		return rootsOut{}, err
	}
	out := rootsOut{Roots: []string{}}
	for _, root := range rr.Roots {
		out.Roots = append(out.Roots, root.URI)
	}
	r.mu.Lock()
	r.roots[ss] = out
	r.mu.Unlock()
	return out, nil
}

func (r *rich) touch(ctx context.Context, _ *mcp.CallToolRequest, in touchIn) (*mcp.CallToolResult, any, error) {
	r.mu.Lock()
	subscribed := r.subs[in.URI] > 0
	r.mu.Unlock()
	if err := r.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: in.URI}); err != nil {
		return nil, nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("subscribed: %v", subscribed)}}}, nil, nil
}

func (r *rich) read(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	switch req.Params.URI {
	case "notes://readme":
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "notes://readme", MIMEType: "text/plain", Text: readme}}}, nil
	case "notes://logo":
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "notes://logo", MIMEType: "image/png", Blob: pngBytes}}}, nil
	}
	return nil, mcp.ResourceNotFoundError(req.Params.URI)
}

func (r *rich) readNote(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	id, err := strconv.Atoi(strings.TrimPrefix(req.Params.URI, "notes://note/"))
	if err != nil {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	r.n.mu.Lock()
	note, ok := r.n.byID[id]
	r.n.mu.Unlock()
	if !ok {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	b, _ := json.Marshal(note)
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(b)}}}, nil
}

func (r *rich) prompt(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	topic := req.Params.Arguments["topic"]
	if topic == "" {
		return nil, fmt.Errorf("topic is required")
	}
	text := "Summarize the notes on " + topic
	if style := req.Params.Arguments["style"]; style != "" {
		text += " in a " + style + " style"
	}
	return &mcp.GetPromptResult{Description: "A summary of " + topic, Messages: []*mcp.PromptMessage{
		{Role: "user", Content: &mcp.TextContent{Text: text + "."}},
		{Role: "user", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "notes://readme", MIMEType: "text/plain", Text: readme}}},
		{Role: "user", Content: &mcp.ImageContent{Data: pngBytes, MIMEType: "image/png"}},
	}}, nil
}

func (r *rich) complete(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	var all []string
	ref, arg := req.Params.Ref, req.Params.Argument
	switch {
	case ref.Type == "ref/prompt" && ref.Name == "summarize" && arg.Name == "topic":
		all = []string{"news", "nothing", "notes"}
	case ref.Type == "ref/resource" && ref.URI == "notes://note/{id}" && arg.Name == "id":
		r.n.mu.Lock()
		for id := range r.n.byID {
			all = append(all, strconv.Itoa(id))
		}
		r.n.mu.Unlock()
	}
	values := []string{}
	for _, v := range all {
		if strings.HasPrefix(v, arg.Value) {
			values = append(values, v)
		}
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: len(values)}}, nil
}
