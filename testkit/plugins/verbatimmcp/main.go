// Command verbatimmcp is an MCP server over stdio (newline-delimited
// JSON-RPC, written by hand so that it can say what no SDK type holds)
// whose results are those of the file os.Args[1], a JSON object mapping
// methods to results (e.g. {"tools/list":{"tools":[...]},
// "resources/read":{"contents":[...]}}), each written as it is: tests
// list and read through the host and compare with the file. Its
// capabilities are those the file's methods need (tools, resources,
// prompts, completions). tools/call answers with one text block holding the call's
// arguments; a method the file lacks answers {}. It exits when its stdin
// ends.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: verbatimmcp RESULTS.json")
		os.Exit(2)
	}
	results, err := load(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "verbatimmcp:", err)
		os.Exit(1)
	}
	caps := map[string]any{}
	for m := range results {
		switch kind, _, _ := strings.Cut(m, "/"); kind {
		case "tools", "resources", "prompts":
			caps[kind] = map[string]any{}
		case "completion":
			caps["completions"] = map[string]any{}
		}
	}
	init, _ := json.Marshal(map[string]any{"protocolVersion": "2025-11-25", "capabilities": caps, "serverInfo": map[string]any{"name": "verbatim", "version": "1.0.0"}})
	out := bufio.NewWriter(os.Stdout)
	reply := func(id json.RawMessage, result []byte) {
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
		_ = out.Flush()
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<16), 1<<24)
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil || len(msg.ID) == 0 {
			continue // a notification, or not JSON
		}
		switch res, ok := results[msg.Method]; {
		case msg.Method == "initialize":
			reply(msg.ID, init)
		case ok:
			reply(msg.ID, res)
		case msg.Method == "tools/call":
			text, _ := json.Marshal(string(msg.Params.Arguments))
			reply(msg.ID, []byte(`{"content":[{"type":"text","text":`+string(text)+`}]}`))
		default:
			reply(msg.ID, []byte(`{}`))
		}
	}
}

// load reads the results file: each method's result, compacted onto one
// line.
func load(path string) (map[string][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := map[string][]byte{}
	for method, res := range m {
		var c bytes.Buffer
		if err := json.Compact(&c, res); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, method, err)
		}
		out[method] = c.Bytes()
	}
	return out, nil
}
