package mcpadapter

import (
	"context"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxServerCalls is the most requests of a server (JSON-RPC calls: with
// an id) that one session with it holds at once, read and not yet
// answered. Past it the session reads nothing more from the server until
// the host answered one of them: a server that floods requests fills its
// own pipe (or HTTP stream), not the host's memory. The relay answers
// all but maxAsking of them at once (relay.take), so a server that reads
// its answers is never held back by this bound.
const maxServerCalls = 4 * maxAsking

// errBoundClosed is a read's error once the connection closed while it
// waited for one of the server's requests to be answered.
var errBoundClosed = errors.New("the connection closed while the host held maxServerCalls requests of the server")

// boundConn holds the server's requests in flight on one connection to
// maxServerCalls (read: a place taken; its answer written: the place
// freed).
type boundConn struct {
	mcp.Connection
	places chan struct{}
	closed chan struct{}
	once   sync.Once
}

// boundCalls wraps c.
func boundCalls(c mcp.Connection) *boundConn {
	return &boundConn{Connection: c, places: make(chan struct{}, maxServerCalls), closed: make(chan struct{})}
}

// Read implements mcp.Connection: a request of the server waits for a
// place before the SDK sees it. Errors: the connection's; ctx's or
// errBoundClosed while a request waits.
func (c *boundConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); err != nil || !ok || !req.IsCall() {
		return msg, err
	}
	select {
	case c.places <- struct{}{}:
		return msg, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, errBoundClosed
	}
}

// Write implements mcp.Connection: an answer to a request of the server
// frees its place.
func (c *boundConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if _, ok := msg.(*jsonrpc.Response); ok {
		select {
		case <-c.places:
		default:
		}
	}
	return err
}

// Close implements mcp.Connection: a read waiting for a place ends.
func (c *boundConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Connection.Close()
}
