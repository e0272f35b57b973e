// Command rounds is a Go SDK plugin whose functions ask their MCP client
// in multi-round-trip requests of their own (MCP 2026-07-28, SEP-2322;
// pluginsdk.InputRequired): "register" asks for a name, then for a color,
// each round with a signed requestState of its own, and refuses a changed
// one (pluginsdk.RefuseRetry); "survey" asks for a name and the client's
// roots at once; "forever" asks again on every retry; its prompt "intro"
// asks for a topic before it is written.
package main

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

type none struct{}

// key signs this process's requestStates.
var key = func() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}()

// sign is the requestState "register:STEP:DATA:MAC" (hex HMAC-SHA256).
func sign(step, data string) string {
	p := "register:" + step + ":" + hex.EncodeToString([]byte(data))
	return p + ":" + mac(p)
}

func mac(p string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(p))
	return hex.EncodeToString(m.Sum(nil))
}

// verify returns the step and data of state, or RefuseRetry's error.
func verify(state string) (step, data string, err error) {
	i := strings.LastIndexByte(state, ':')
	if i < 0 || !hmac.Equal([]byte(state[i+1:]), []byte(mac(state[:i]))) {
		return "", "", pluginsdk.RefuseRetry("register: requestState %q was not written by this plugin", state)
	}
	parts := strings.Split(state[:i], ":")
	d, _ := hex.DecodeString(parts[2])
	return parts[1], string(d), nil
}

// ask is an elicitation of one string property name.
func ask(message, name string) *mcp.ElicitParams {
	return &mcp.ElicitParams{Message: message, RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{name: map[string]any{"type": "string"}}, "required": []string{name}}}
}

// answer returns member of the accepted elicitation under k.
func answer(rs mcp.InputResponseMap, k, member string) (string, bool) {
	er, ok := rs[k].(*mcp.ElicitResult)
	if !ok || er.Action != "accept" {
		return "", false
	}
	s, ok := er.Content[member].(string)
	return s, ok
}

// result is a text block of v's JSON with v as structuredContent.
func result(v any) *mcp.CallToolResult {
	b, _ := json.Marshal(v)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: v}
}

func register(ctx context.Context, _ none) (*mcp.CallToolResult, error) {
	rs, err := pluginsdk.InputResponses(ctx)
	if err != nil {
		return nil, err
	}
	step, name := "", ""
	if state := pluginsdk.RequestState(ctx); state != "" {
		if step, name, err = verify(state); err != nil {
			return nil, err
		}
	}
	switch step {
	case "1":
		if n, ok := answer(rs, "name", "name"); ok {
			return pluginsdk.InputRequired(mcp.InputRequestMap{"color": ask("Your favourite color, "+n+"?", "color")}, sign("2", n)), nil
		}
	case "2":
		if c, ok := answer(rs, "color", "color"); ok {
			return result(map[string]any{"name": name, "color": c}), nil
		}
		return pluginsdk.InputRequired(mcp.InputRequestMap{"color": ask("Your favourite color, "+name+"?", "color")}, sign("2", name)), nil
	}
	return pluginsdk.InputRequired(mcp.InputRequestMap{"name": ask("Your name?", "name")}, sign("1", "")), nil
}

func survey(ctx context.Context, _ none) (*mcp.CallToolResult, error) {
	rs, err := pluginsdk.InputResponses(ctx)
	if err != nil {
		return nil, err
	}
	n, okName := answer(rs, "name", "name")
	roots, okRoots := rs["roots"].(*mcp.ListRootsResult)
	if okName && okRoots {
		uris := []string{}
		for _, r := range roots.Roots {
			uris = append(uris, r.URI)
		}
		return result(map[string]any{"name": n, "roots": uris}), nil
	}
	return pluginsdk.InputRequired(mcp.InputRequestMap{"name": ask("Your name?", "name"), "roots": &mcp.ListRootsParams{}}, ""), nil
}

func forever(ctx context.Context, _ none) (*mcp.CallToolResult, error) {
	return pluginsdk.InputRequired(mcp.InputRequestMap{"again": ask("Once more?", "x")}, "forever"), nil
}

// plugin adds the prompt "intro" to the toolkit.
type plugin struct{ *pluginsdk.Toolkit }

// Catalog implements pluginsdk.Cataloger.
func (plugin) Catalog(context.Context) (*pluginsdk.Catalog, error) {
	return &pluginsdk.Catalog{Prompts: []*mcp.Prompt{{Name: "intro", Description: "An introduction to a topic the client is asked for."}}}, nil
}

// HandleMCP implements pluginsdk.Cataloger: prompts/get of "intro".
func (plugin) HandleMCP(_ context.Context, method string, params json.RawMessage) (any, error) {
	var p mcp.GetPromptParams
	if method != "prompts/get" || json.Unmarshal(params, &p) != nil || p.Name != "intro" {
		return nil, &pluginsdk.RPCError{Code: -32601, Message: "not served: " + method}
	}
	if topic, ok := answer(p.InputResponses, "topic", "topic"); ok {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf("Introduce %s (state %q).", topic, p.RequestState)}}}}, nil
	}
	return &mcp.GetPromptResult{InputRequests: mcp.InputRequestMap{"topic": ask("Which topic?", "topic")}, RequestState: "intro-1"}, nil
}

func main() {
	tk := pluginsdk.NewToolkit(opentool.Info{Title: "rounds", Version: "1.0.0"}).Add(
		pluginsdk.ResultFunc("register", "Asks for a name, then a color, in rounds with a signed requestState.", register),
		pluginsdk.ResultFunc("survey", "Asks for a name and the client's roots in one round.", survey),
		pluginsdk.ResultFunc("forever", "Asks again on every retry.", forever),
	)
	pluginsdk.Serve(plugin{tk})
}
