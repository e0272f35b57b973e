package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/testkit"
)

// Keys of the tool search tests: all may call every function (11 of the
// calculator and the mock, over the threshold of 3), sub two of them
// (subtract, sequentiallyRead: under it), rated one (add) with a burst of
// 3 calls and next to no refill.
const (
	tsAllKey   = "k-all"
	tsSubKey   = "k-sub"
	tsRatedKey = "k-rated"
)

// startToolSearchHost serves the calculator and the mock with
// --tool-search --tool-search-threshold 3 and the keys above.
func startToolSearchHost(t *testing.T) *hostProc {
	t.Helper()
	dir := t.TempDir()
	for _, p := range []string{"calculator", "mock"} {
		testkit.InstallPlugin(t, dir, p, "./plugins/"+p)
	}
	keys := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keys, []byte(`{"keys":[{"name":"all","key":"`+tsAllKey+`","allow":["*"]},`+
		`{"name":"sub","key":"`+tsSubKey+`","allow":["subtract","sequentiallyRead"]},`+
		`{"name":"rated","key":"`+tsRatedKey+`","allow":["add"],"rate":{"per_second":0.001,"burst":3}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return startHostProc(t, dir, "--api-keys-file", keys, "--tool-search", "--tool-search-threshold", "3")
}

// frontEnd calls the host's functions through one front end: call
// returns what the caller would compare (the whole answer, durations
// blanked) and, for a success, the result object.
type frontEnd struct {
	name string
	call func(t *testing.T, key, fn string, args any) (answer string, result json.RawMessage)
}

// frontEnds are the OpenTool API, Open Tool Calling and MCP over
// streamable HTTP, each calling as one key (MCP keeps a session per key).
func frontEnds(t *testing.T, hp *hostProc) []frontEnd {
	sessions := map[string]*mcp.ClientSession{}
	durationRE := regexp.MustCompile(`"duration":[0-9.]+,`)
	return []frontEnd{
		{"opentool", func(t *testing.T, key, fn string, args any) (string, json.RawMessage) {
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": fn, "params": args, "id": 1})
			st, _, out := httpDo(t, http.MethodPost, hp.url+"/opentool/call", key, string(body))
			var resp struct {
				Result json.RawMessage `json:"result"`
				Error  any             `json:"error"`
			}
			_ = json.Unmarshal([]byte(out), &resp)
			if st != http.StatusOK || resp.Error != nil {
				return http.StatusText(st) + " " + out, nil
			}
			return out, resp.Result
		}},
		{"otc", func(t *testing.T, key, fn string, args any) (string, json.RawMessage) {
			kit := map[string]string{"search_tools": "OpentoolHost", "call_tool": "OpentoolHost", "run_code": "OpentoolHost", "add": "Calculator", "subtract": "Calculator"}[fn]
			body, _ := json.Marshal(map[string]any{"request": map[string]any{"call_id": "c", "tool_id": kit + "." + fn, "input": args}})
			st, _, out := httpDo(t, http.MethodPost, hp.url+"/otc/call", key, string(body))
			var resp struct {
				Success bool `json:"success"`
				Output  struct {
					Value json.RawMessage `json:"value"`
				} `json:"output"`
			}
			_ = json.Unmarshal([]byte(out), &resp)
			out = http.StatusText(st) + " " + durationRE.ReplaceAllString(out, "")
			if !resp.Success {
				return out, nil
			}
			return out, resp.Output.Value
		}},
		{"mcp", func(t *testing.T, key, fn string, args any) (string, json.RawMessage) {
			cs := sessions[key]
			if cs == nil {
				cs = connectMCP(t, hp.url, key)
				sessions[key] = cs
			}
			res, err := mcpCall(t, cs, fn, args)
			var je *jsonrpc.Error
			switch {
			case errors.As(err, &je):
				return je.Error(), nil
			case err != nil:
				t.Fatalf("mcp %s: %v", fn, err)
			case res.IsError:
				return mustJSON(t, res), nil
			}
			b, _ := json.Marshal(res.StructuredContent)
			return mustJSON(t, res), b
		}},
	}
}

// found is the tool names of a search_tools result.
func found(t *testing.T, res json.RawMessage) []string {
	t.Helper()
	var out struct {
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		t.Fatalf("search_tools result %s: %v", res, err)
	}
	var names []string
	for _, tl := range out.Tools {
		names = append(names, tl.Name)
		if tl.Description == "" || !strings.HasPrefix(string(tl.InputSchema), `{`) {
			t.Errorf("search_tools: %s without a description or an input schema: %s", tl.Name, res)
		}
	}
	return names
}

// TestToolSearchOnEveryFrontEnd (issue 25): with --tool-search, search_tools
// and call_tool are functions of every front end (OpenTool, OTC, MCP),
// listed and filtered per key like any function, the threshold applied to
// every listing; search_tools finds only what the key may call; call_tool
// calls it through the usual call path, a function the key may not call
// answered exactly as an unknown one, and costs the key one rate-limit
// token, as a direct call does.
func TestToolSearchOnEveryFrontEnd(t *testing.T) {
	hp := startToolSearchHost(t)
	meta := []string{"call_tool", "search_tools"}

	// Listings: the key "all" may call 11 functions, over the threshold:
	// the two alone; "sub" is under it: its two and the two. (Listings
	// take rate-limit tokens too: "rated" keeps its own for calls.)
	for key, want := range map[string][]string{
		tsAllKey: meta,
		tsSubKey: {"call_tool", "search_tools", "sequentiallyRead", "subtract"},
	} {
		for front, got := range listed(t, hp, key, connectMCP(t, hp.url, key)) {
			if !slices.Equal(got, want) {
				t.Errorf("key %s, %s lists %v, want %v", key, front, got, want)
			}
		}
	}
	for _, format := range []string{"openai-chat", "anthropic"} {
		if st, _, body := httpDo(t, http.MethodGet, hp.url+"/opentool/export?format="+format, tsAllKey, ""); st != 200 ||
			strings.Count(body, `"search_tools"`) != 1 || strings.Count(body, `"call_tool"`) != 1 || strings.Contains(body, `"add"`) {
			t.Errorf("export %s for the key over the threshold: %d %s", format, st, body)
		}
	}

	for _, fe := range frontEnds(t, hp) {
		t.Run(fe.name, func(t *testing.T) {
			// search_tools ranks what the key may call, and only that.
			_, res := fe.call(t, tsAllKey, "search_tools", map[string]any{"query": "sum of two numbers", "limit": 3})
			if got := found(t, res); len(got) == 0 || got[0] != "add" {
				t.Errorf("all: search 'sum of two numbers' = %v, want add first", got)
			}
			_, res = fe.call(t, tsSubKey, "search_tools", map[string]any{"query": "subtract a number or add two numbers"})
			if got := found(t, res); len(got) != 1 || got[0] != "subtract" {
				t.Errorf("sub: search 'subtract a number or add two numbers' = %v, want subtract alone (add is not the key's)", got)
			}
			// call_tool answers what the function answers.
			answer, res := fe.call(t, tsAllKey, "call_tool", map[string]any{"name": "add", "arguments": map[string]any{"a": 2, "b": 3}})
			if !strings.Contains(string(res), `"result":5`) {
				t.Errorf("call_tool add: %s", answer)
			}
			_, direct := fe.call(t, tsAllKey, "add", map[string]any{"a": 2, "b": 3})
			if string(res) != string(direct) {
				t.Errorf("call_tool add gave %s, add %s", res, direct)
			}
			// A streaming function's items, collected.
			fe.call(t, tsAllKey, "call_tool", map[string]any{"name": "create", "arguments": map[string]any{"text": "from " + fe.name}})
			answer, res = fe.call(t, tsSubKey, "call_tool", map[string]any{"name": "sequentiallyRead"})
			if !strings.HasPrefix(string(res), `{"items":[`) || !strings.Contains(string(res), `{"data":"from `+fe.name+`"}`) {
				t.Errorf("call_tool sequentiallyRead: %s", answer)
			}
			// Invalid arguments of the named function are its own.
			if answer, res = fe.call(t, tsAllKey, "call_tool", map[string]any{"name": "add", "arguments": map[string]any{"a": "x", "b": 1}}); res != nil || !strings.Contains(answer, "a: must be number") {
				t.Errorf("call_tool add with a string: %s", answer)
			}
			// A function the key may not call, through call_tool: the
			// answer of one that does not exist, the name aside.
			forbidden, _ := fe.call(t, tsSubKey, "call_tool", map[string]any{"name": "add", "arguments": map[string]any{"a": 1, "b": 2}})
			unknown, _ := fe.call(t, tsSubKey, "call_tool", map[string]any{"name": "zzadd", "arguments": map[string]any{"a": 1, "b": 2}})
			t.Logf("call_tool of a function the key may not call: %s", forbidden)
			if forbidden != strings.ReplaceAll(unknown, "zzadd", "add") || !strings.Contains(forbidden, `add`) {
				t.Errorf("call_tool of a forbidden function:\n%s\nof an unknown one:\n%s", forbidden, unknown)
			}
			if fe.name != "otc" { // OTC names tools by id, not by function name
				if direct, _ := fe.call(t, tsSubKey, "add", map[string]any{"a": 1, "b": 2}); direct != forbidden {
					t.Errorf("call_tool of a forbidden function:\n%s\ncalling it by name:\n%s", forbidden, direct)
				}
			}
			if answer, res := fe.call(t, tsAllKey, "call_tool", map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "add"}}); res != nil || !strings.Contains(answer, "not call_tool") {
				t.Errorf("call_tool of call_tool: %s", answer)
			}
		})
	}

	// Rate: call_tool costs what a direct call costs, one token. The key
	// "rated" has 3: three calls pass on any front end, the fourth not.
	calls := frontEnds(t, hp)
	for i, fe := range []frontEnd{calls[0], calls[1], calls[0]} {
		if answer, res := fe.call(t, tsRatedKey, "call_tool", map[string]any{"name": "add", "arguments": map[string]any{"a": 1, "b": i}}); res == nil {
			t.Fatalf("call %d through %s: %s", i+1, fe.name, answer)
		}
	}
	if answer, _ := calls[1].call(t, tsRatedKey, "call_tool", map[string]any{"name": "add", "arguments": map[string]any{"a": 1, "b": 1}}); !strings.HasPrefix(answer, "Too Many Requests") {
		t.Errorf("a fourth call with a burst of 3: %s", answer)
	}
}

// TestToolSearchOverStdio: `mcp --tool-search` serves the two functions
// over stdio (no keys), and the threshold applies there too.
func TestToolSearchOverStdio(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"calculator", "mock"} {
		testkit.InstallPlugin(t, dir, p, "./plugins/"+p)
	}
	for threshold, want := range map[string]int{"0": 13, "3": 2} {
		cmd := exec.Command(testkit.Build(t, "./cmd/opentool-host"), "mcp", "--dir", dir, "--state-dir", t.TempDir(), "--watch=false", "--tool-search", "--tool-search-threshold", threshold, "--log-level", "info")
		started := mcpStarted(cmd)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		waitMCPStarted(t, started)
		if got := toolNames(t, cs); len(got) != want || !slices.Contains(got, "search_tools") || !slices.Contains(got, "call_tool") {
			t.Errorf("threshold %s: tools/list = %v, want %d tools with the two", threshold, got, want)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "multiply", "arguments": map[string]any{"a": 6, "b": 7}}})
		if err != nil || res.IsError || !strings.Contains(mustJSON(t, res.StructuredContent), "42") {
			t.Errorf("threshold %s: call_tool multiply: %v %+v", threshold, err, res)
		}
		_ = cs.Close()
		cancel()
	}
}

// TestToolSearchNameTaken: a plugin that declares a function named like
// one of the host's own keeps its other functions; that one is served
// prefixed (clash__search_tools, run's default), a conflict owned by
// opentool-host on /health, and the name stays the host's.
func TestToolSearchNameTaken(t *testing.T) {
	dir := t.TempDir()
	decl := `{"description":"Clashes.","version":"1.0.0","functions":[` +
		`{"name":"search_tools","description":"Not the host's.","parameters":[],"command":["true"]},` +
		`{"name":"say","description":"Says hi.","parameters":[],"command":["echo","hi"]}]}`
	if err := os.WriteFile(filepath.Join(dir, "clash.tools.json"), []byte(decl), 0o644); err != nil {
		t.Fatal(err)
	}
	hp := startHostProc(t, dir, "--tool-search")
	_, _, health := httpDo(t, http.MethodGet, hp.url+"/health", "", "")
	if !strings.Contains(health, `"conflicts":[{"function":"search_tools","owner":"opentool-host","served_as":"clash__search_tools"}]`) {
		t.Errorf("/health does not show the conflict: %s", health)
	}
	answer, res := frontEnds(t, hp)[0].call(t, "", "search_tools", map[string]any{"query": "say hi"})
	if got := found(t, res); !slices.Equal(got, []string{"say"}) {
		t.Errorf("search_tools is not the host's: %s", answer)
	}
}

// mustJSON is v as JSON.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
