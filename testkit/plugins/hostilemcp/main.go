// Command hostilemcp is an MCP server over stdio (newline-delimited
// JSON-RPC, written by hand so that it can break every rule) that serves
// two tools: "ping" answers "pong answered=A refused=R notified=N" (how
// many of the server's own requests got a result and an error, how many
// notifications of the storm it sent); "attack" attacks its client as
// os.Args[1] says:
//
//	bigline   writes one line of 1 GiB
//	deep      answers with a result nested 1,000,000 arrays deep
//	badutf8   answers with text holding bytes that are not UTF-8
//	notify    answers, then sends 50,000 notifications/message
//	requests  sends 10,000 sampling/createMessage requests during the
//	          call (reading the answers), then answers with how many
//	          were answered with a result and with an error
//	garbage   writes 100,000 lines that are not JSON
//	outside   answers, then sends 200,000 requests outside any call
//	          (roots/list, elicitation/create, sampling/createMessage in
//	          turn) as fast as its client reads them, until the next
//	          ping (which ends the flood, so that its answer waits
//	          behind no more than the flood has already written)
//	manytools lists 10,001 tools
//	biginit   answers initialize with a line of 100 MiB
//	exit      exits with status 3 during the call
//	hang      never answers
//
// Every attack is bounded in size and count; the server exits when its
// stdin ends.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
)

// out serializes writes to stdout.
var out = struct {
	sync.Mutex
	w *bufio.Writer
}{w: bufio.NewWriterSize(os.Stdout, 1<<16)}

// send writes one line and flushes.
func send(line string) {
	out.Lock()
	defer out.Unlock()
	_, _ = out.w.WriteString(line)
	_ = out.w.WriteByte('\n')
	_ = out.w.Flush()
}

// reply answers request id with result (JSON).
func reply(id json.RawMessage, result string) {
	send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + `}`)
}

// text is a tools/call result with one text block.
func text(s string) string {
	b, _ := json.Marshal(s)
	return `{"content":[{"type":"text","text":` + string(b) + `}]}`
}

const tools = `{"tools":[` +
	`{"name":"ping","description":"Answers pong.","inputSchema":{"type":"object"}},` +
	`{"name":"attack","description":"Attacks the client.","inputSchema":{"type":"object"}}]}`

// answered and refused count the replies to the server's own requests;
// notified the notifications of the storm sent so far.
var answered, refused, notified atomic.Int64

// pinged is set by the first ping: the outside flood stops at it.
var pinged atomic.Bool

func main() {
	mode := ""
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return // stdin ended
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal([]byte(line), &msg) != nil {
			continue
		}
		switch {
		case msg.Method == "" && msg.Error != nil:
			refused.Add(1)
		case msg.Method == "":
			answered.Add(1)
		case msg.Method == "initialize" && mode == "biginit":
			reply(msg.ID, `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"`+strings.Repeat("h", 100<<20)+`","version":"1"}}`)
		case msg.Method == "tools/list" && mode == "manytools":
			reply(msg.ID, manyTools(10_001))
		case msg.Method == "initialize":
			reply(msg.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"logging":{}},"serverInfo":{"name":"hostile","version":"1.0.0"}}`)
		case msg.Method == "tools/list":
			reply(msg.ID, tools)
		case msg.Method == "tools/call" && msg.Params.Name == "ping":
			pinged.Store(true)
			reply(msg.ID, text(fmt.Sprintf("pong answered=%d refused=%d notified=%d", answered.Load(), refused.Load(), notified.Load())))
		case msg.Method == "tools/call" && msg.Params.Name == "attack":
			go attack(mode, msg.ID)
		case len(msg.ID) > 0:
			reply(msg.ID, `{}`) // ping, logging/setLevel, ...
		}
	}
}

// manyTools is a tools/list result of n tools.
func manyTools(n int) string {
	var b strings.Builder
	b.WriteString(`{"tools":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"t%d","inputSchema":{"type":"object"}}`, i)
	}
	b.WriteString(`]}`)
	return b.String()
}

// attack runs mode for the call id.
func attack(mode string, id json.RawMessage) {
	switch mode {
	case "bigline":
		out.Lock()
		_, _ = out.w.WriteString(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"`)
		chunk := strings.Repeat("a", 1<<20)
		for i := 0; i < 1024; i++ {
			if _, err := out.w.WriteString(chunk); err != nil {
				break
			}
		}
		_ = out.w.Flush()
		out.Unlock()
	case "deep":
		const depth = 1_000_000
		reply(id, `{"content":[{"type":"text","text":"deep"}],"structuredContent":{"a":`+strings.Repeat("[", depth)+strings.Repeat("]", depth)+`}}`)
	case "badutf8":
		send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":"bad ` + "\xff\xfe" + ` bytes"}]}}`)
	case "notify":
		reply(id, text("storm"))
		for i := 0; i < 50_000; i++ {
			send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","data":"spam %d"}}`, i))
			notified.Add(1)
		}
	case "requests":
		const n = 10_000
		for i := 1; i <= n; i++ {
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"s%d","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":1}}`, i))
		}
		reply(id, text(fmt.Sprintf("sent %d", n)))
	case "outside":
		reply(id, text("flooding"))
		methods := []string{
			`"method":"roots/list"`,
			`"method":"elicitation/create","params":{"mode":"form","message":"hi","requestedSchema":{"type":"object","properties":{}}}`,
			`"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":1}`,
		}
		for i := range 200_000 {
			if pinged.Load() {
				break
			}
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"o%d",%s}`, i, methods[i%len(methods)]))
		}
	case "garbage":
		for i := 0; i < 100_000; i++ {
			send("this is not JSON " + strings.Repeat("x", 64))
		}
	case "exit":
		os.Exit(3)
	case "hang":
		select {}
	default:
		fmt.Fprintln(os.Stderr, "hostilemcp: unknown mode", mode)
		reply(id, text("no attack"))
	}
}
