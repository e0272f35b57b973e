// Command verbatimmcp is an MCP server over stdio (newline-delimited
// JSON-RPC, written by hand so that it can say what no SDK type holds)
// whose tools/list result is the JSON object in the file os.Args[1],
// written as it is: tests list its tools through the host and compare
// them with the file. tools/call answers with one text block holding the
// call's arguments. It exits when its stdin ends.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: verbatimmcp TOOLS.json")
		os.Exit(2)
	}
	list, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "verbatimmcp:", err)
		os.Exit(1)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, list); err != nil {
		fmt.Fprintln(os.Stderr, "verbatimmcp:", err)
		os.Exit(1)
	}
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
		switch msg.Method {
		case "initialize":
			reply(msg.ID, []byte(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"verbatim","version":"1.0.0"}}`))
		case "tools/list":
			reply(msg.ID, compact.Bytes())
		case "tools/call":
			text, _ := json.Marshal(string(msg.Params.Arguments))
			reply(msg.ID, []byte(`{"content":[{"type":"text","text":`+string(text)+`}]}`))
		default:
			reply(msg.ID, []byte(`{}`))
		}
	}
}
