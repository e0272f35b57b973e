package floor

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// The MCP gateway floor is the least an HTTP gateway in front of an MCP
// server over stdio can do, with no host and no MCP SDK in it: one
// net/http handler that answers initialize itself, forwards every other
// request's method and params to the one server process as a JSON-RPC line
// under an id of its own, and answers the POST with the server's result
// under the client's id (application/json, no SSE). Notifications are
// accepted (202) and not forwarded. It keeps no session, checks nothing
// and never streams: what it costs is the HTTP round trip, one decode and
// one encode each way, and the server's own stdio round trip. An MCP
// server behind the host (path mcp-server) is compared with it to see the
// host's own share of a call, and it with a client of the server over
// stdio to see what any gateway adds.

// MCPGateway is the bare gateway: an http.Handler serving one MCP server
// process it started (StartMCPGateway). Its methods are safe for
// concurrent use.
type MCPGateway struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	version string // the protocol version initialize answers with

	wmu sync.Mutex    // serializes writes of whole lines to the server
	w   *bufio.Writer // the server's stdin

	mu   sync.Mutex
	next int64                 // the gateway's last request id
	wait map[int64]chan []byte // pending requests by gateway id
	done chan struct{}         // closed when the server's stdout ends
	err  error                 // why it ended, set before done is closed
}

// StartMCPGateway starts the MCP server argv (argv[0] is its path),
// initializes it over stdio at protocol version version (the initialize
// request, then notifications/initialized) and returns the gateway in
// front of it. Errors: the server cannot start, or it does not answer
// initialize within 10 s.
func StartMCPGateway(argv []string, version string) (*MCPGateway, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("MCP gateway floor: %w", err)
	}
	g := &MCPGateway{cmd: cmd, stdin: stdin, version: version, w: bufio.NewWriterSize(stdin, 64<<10),
		wait: map[int64]chan []byte{}, done: make(chan struct{})}
	go g.read(bufio.NewReaderSize(stdout, 64<<10))
	init := `{"protocolVersion":` + strconv.Quote(version) + `,"capabilities":{},"clientInfo":{"name":"opentool-bench-gateway","version":"1"}}`
	if _, err := g.roundTrip("initialize", []byte(init), 10*time.Second); err != nil {
		g.Close()
		return nil, fmt.Errorf("MCP gateway floor: initialize: %w", err)
	}
	if err := g.writeLine([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// PID returns the process id of the server.
func (g *MCPGateway) PID() int { return g.cmd.Process.Pid }

// Close ends the server: its stdin is closed, and it is killed if it has
// not exited 2 s later.
func (g *MCPGateway) Close() {
	_ = g.stdin.Close()
	t := time.AfterFunc(2*time.Second, func() { _ = g.cmd.Process.Kill() })
	_ = g.cmd.Wait()
	t.Stop()
}

// read hands each response line of the server to the request waiting for
// its id until stdout ends; requests and notifications of the server are
// dropped.
func (g *MCPGateway) read(r *bufio.Reader) {
	var err error
	for {
		var line []byte
		if line, err = r.ReadBytes('\n'); err != nil {
			break
		}
		var m struct {
			ID     *int64 `json:"id"`
			Method string `json:"method"`
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil || m.Method != "" {
			continue
		}
		g.mu.Lock()
		ch := g.wait[*m.ID]
		delete(g.wait, *m.ID)
		g.mu.Unlock()
		if ch != nil {
			ch <- line
		}
	}
	g.mu.Lock()
	g.err = fmt.Errorf("the MCP server's stdout ended: %w", err)
	g.mu.Unlock()
	close(g.done)
}

// writeLine writes one whole line to the server.
func (g *MCPGateway) writeLine(line []byte) error {
	g.wmu.Lock()
	defer g.wmu.Unlock()
	if _, err := g.w.Write(line); err != nil {
		return err
	}
	return g.w.Flush()
}

// roundTrip sends method with params (raw JSON, nil for none) to the
// server under a new id and returns its response line. Errors: the write
// fails, the server goes away, or no response comes within timeout.
func (g *MCPGateway) roundTrip(method string, params []byte, timeout time.Duration) ([]byte, error) {
	ch := make(chan []byte, 1)
	g.mu.Lock()
	g.next++
	id := g.next
	g.wait[id] = ch
	g.mu.Unlock()
	msg := make([]byte, 0, len(params)+len(method)+64)
	msg = append(msg, `{"jsonrpc":"2.0","id":`...)
	msg = strconv.AppendInt(msg, id, 10)
	msg = append(msg, `,"method":`...)
	msg = strconv.AppendQuote(msg, method)
	if params != nil {
		msg = append(msg, `,"params":`...)
		msg = append(msg, params...)
	}
	msg = append(msg, "}\n"...)
	forget := func() {
		g.mu.Lock()
		delete(g.wait, id)
		g.mu.Unlock()
	}
	if err := g.writeLine(msg); err != nil {
		forget()
		return nil, err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case line := <-ch:
		return line, nil
	case <-g.done:
		forget()
		g.mu.Lock()
		defer g.mu.Unlock()
		return nil, g.err
	case <-t.C:
		forget()
		return nil, errors.New("no response in time")
	}
}

// ServeHTTP answers one POSTed JSON-RPC message: initialize by itself
// (with the session id "floor"), a notification with 202, anything else
// with the server's response under the client's id. A body that is not a
// JSON-RPC message gets 400; a server that went away or did not answer
// within 30 s, 502.
func (g *MCPGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err != nil || json.Unmarshal(body, &req) != nil || req.Method == "" {
		http.Error(w, "not a JSON-RPC request", http.StatusBadRequest)
		return
	}
	switch {
	case req.ID == nil:
		w.WriteHeader(http.StatusAccepted)
		return
	case req.Method == "initialize":
		w.Header().Set("Mcp-Session-Id", "floor")
		writeJSONRPC(w, req.ID, "result", []byte(`{"protocolVersion":`+strconv.Quote(g.version)+
			`,"capabilities":{"tools":{}},"serverInfo":{"name":"floor","version":"1"}}`))
		return
	}
	line, err := g.roundTrip(req.Method, req.Params, 30*time.Second)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		http.Error(w, "the server's response: "+err.Error(), http.StatusBadGateway)
		return
	}
	if resp.Error != nil {
		writeJSONRPC(w, req.ID, "error", resp.Error)
		return
	}
	writeJSONRPC(w, req.ID, "result", resp.Result)
}

// writeJSONRPC writes the JSON-RPC response {"jsonrpc":"2.0","id":id,
// key:value} as application/json.
func writeJSONRPC(w http.ResponseWriter, id json.RawMessage, key string, value []byte) {
	var b bytes.Buffer
	b.Grow(len(id) + len(value) + 40)
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	b.WriteString(`,"` + key + `":`)
	b.Write(value)
	b.WriteByte('}')
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b.Bytes())
}
