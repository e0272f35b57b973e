package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// The data channel: a lean second transport for the calls of plugins
// that offer it (the Go SDK does), beside gRPC, which stays the
// language-neutral default and carries everything else (Load, Watch,
// health, shutdown). docs/plugin-protocol.md ("Data channel") is its
// specification; this file is its framing, channel.go the host side,
// pluginsdk/channel.go the plugin side.
//
// The host creates a connected pair of unix stream sockets per process
// and hands one end to the plugin as an inherited file descriptor named by
// DataFDEnv. A plugin that speaks the channel writes the hello frame on it
// before it prints its go-plugin handshake line; the host, having read the
// handshake, looks for the hello without waiting (AcceptChannel): present,
// calls go over the channel; absent, over gRPC. No socket file exists, so
// no other process can connect.
//
// Every frame is a 16-byte header and a body:
//
//	offset 0  uint32 big endian: body length in bytes
//	offset 4  uint8: frame type (Frame*)
//	offset 5  3 bytes: zero
//	offset 8  uint64 big endian: call id (0 for the hello)
//
// The host numbers calls from 1 and never reuses an id. The semantics are
// the Invoke stream's (tool.proto): a call starts with its call frame, a
// cancel may follow, the plugin answers with one result (unary) or items
// then an end (stream), or one error. A streaming call is flow
// controlled: the plugin may have at most StreamWindow items the host has
// not yet granted back with a credit frame.
//
// Under protocol 3 (ProtocolV3, negotiated by go-plugin; the hello is the
// same) a call frame may carry the caller's _meta (flag bit 1), the
// plugin may send an MCP result instead of a result and messages during
// the call, and the host answers the plugin's requests with replies
// (message.go). At most MessageWindow messages of one call may wait for
// the host to take them; a notification beyond them is dropped and a
// request beyond them answered with an error.

// DataFDEnv is the environment variable that names the plugin's end of
// the data channel (a file descriptor number, "3").
const DataFDEnv = "OPENTOOL_DATA_FD"

// Frame types.
const (
	// FrameCall (host → plugin) starts call id. Body: flags uint8 (bit 0:
	// the function streams; bit 1, protocol 3: a _meta follows), then
	// three strings each prefixed by a uint16 big-endian length (function
	// name, W3C traceparent, tracestate; the last two may be empty), then
	// with bit 1 the caller's MCP _meta (a JSON object) prefixed by a
	// uint32 big-endian length, then the JSON arguments object (the rest;
	// empty for none).
	FrameCall byte = 1
	// FrameCancel (host → plugin) ends call id's context. Empty body.
	// One for an unknown or ended call is ignored.
	FrameCancel byte = 2
	// FrameCredit (host → plugin) grants streaming call id more items.
	// Body: uint32 big endian, the number of items.
	FrameCredit byte = 3
	// FrameReply (host → plugin, protocol 3) answers the plugin's request
	// on call id. Body: the Reply as JSON, {"id":N,"result":{...}} or
	// {"id":N,"error":{"code","message"[,"data"]}}. One for an ended call
	// is ignored.
	FrameReply byte = 4

	// FrameResult (plugin → host) is a unary call's result, a JSON
	// object, and ends the call.
	FrameResult byte = 16
	// FrameItem (plugin → host) is one item of a streaming call, a JSON
	// object.
	FrameItem byte = 17
	// FrameEnd (plugin → host) ends a streaming call normally. Empty body.
	FrameEnd byte = 18
	// FrameError (plugin → host) ends call id with the tool's error.
	// Body: int32 big endian code, then the message (UTF-8, the rest).
	FrameError byte = 19
	// FrameMCPResult (plugin → host, protocol 3) is a unary call's result
	// as an MCP CallToolResult (a JSON object), and ends the call.
	FrameMCPResult byte = 20
	// FrameMessage (plugin → host, protocol 3) is a notification or
	// request to the call's caller. Body: the Message as JSON,
	// {"method":M,"params":{...}} or, for a request, with "id":N (N > 0,
	// unique within the call).
	FrameMessage byte = 21
	// FrameHello (plugin → host, id 0) is the first frame, written before
	// the go-plugin handshake. Body: HelloBody.
	FrameHello byte = 32
)

// HelloBody is the hello frame's body: the channel protocol and version.
const HelloBody = "opentool-data/1"

// StreamWindow is how many items of one streaming call the plugin may
// send beyond those the host has granted back (credit frames).
const StreamWindow = 16

// MessageWindow is how many messages of one call (protocol 3) may wait
// for the host to take them.
const MessageWindow = 64

// headerSize is the size of a frame header in bytes.
const headerSize = 16

// smallFrame is the largest frame (header and body) written with one
// copy into a pooled buffer; larger bodies are written with writev.
const smallFrame = 16 << 10

// ErrProtocol is wrapped by the errors of a frame that breaks the data
// channel's protocol (unknown type, non-zero padding, frame for an
// unknown call, items beyond the window, a bad call body).
var ErrProtocol = errors.New("data channel protocol violation")

// header is a parsed frame header.
type header struct {
	size uint32
	typ  byte
	id   uint64
}

// readHeader reads one frame header from r. Errors: the read error
// (io.EOF at a frame boundary, io.ErrUnexpectedEOF inside one), or
// ErrProtocol when the padding is not zero.
func readHeader(r *bufio.Reader, buf *[headerSize]byte) (header, error) {
	if _, err := io.ReadFull(r, buf[:]); err != nil {
		return header{}, err
	}
	return parseHeader(buf[:])
}

// parseHeader decodes the header at the start of b. Errors: ErrProtocol
// when b is shorter than a header or the padding is not zero.
func parseHeader(b []byte) (header, error) {
	if len(b) < headerSize {
		return header{}, fmt.Errorf("%w: frame header cut short", ErrProtocol)
	}
	if b[5]|b[6]|b[7] != 0 {
		return header{}, fmt.Errorf("%w: non-zero header padding", ErrProtocol)
	}
	return header{
		size: binary.BigEndian.Uint32(b[0:4]),
		typ:  b[4],
		id:   binary.BigEndian.Uint64(b[8:16]),
	}, nil
}

// putHeader writes the header of a frame with a body of size bytes.
func putHeader(b []byte, typ byte, id uint64, size int) {
	binary.BigEndian.PutUint32(b[0:4], uint32(size))
	b[4] = typ
	b[5], b[6], b[7] = 0, 0, 0
	binary.BigEndian.PutUint64(b[8:16], id)
}

var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// frameWriter writes whole frames to one connection from many
// goroutines; a frame is never interleaved with another.
type frameWriter struct {
	mu   sync.Mutex
	conn net.Conn
}

// write writes the frame typ/id whose body is prefix followed by body
// (either may be empty). Errors: the connection's write error.
func (w *frameWriter) write(typ byte, id uint64, prefix, body []byte) error {
	size := len(prefix) + len(body)
	if headerSize+size <= smallFrame {
		bp := framePool.Get().(*[]byte)
		b := append((*bp)[:0], make([]byte, headerSize)...)
		putHeader(b, typ, id, size)
		b = append(append(b, prefix...), body...)
		w.mu.Lock()
		_, err := w.conn.Write(b)
		w.mu.Unlock()
		*bp = b
		framePool.Put(bp)
		return err
	}
	head := make([]byte, headerSize, headerSize+len(prefix))
	putHeader(head, typ, id, size)
	bufs := net.Buffers{append(head, prefix...), body}
	w.mu.Lock()
	_, err := bufs.WriteTo(w.conn)
	w.mu.Unlock()
	return err
}

// CallFrame is the decoded body of a call frame.
type CallFrame struct {
	// Stream is true for a streaming function.
	Stream bool
	// Name is the function name.
	Name string
	// Traceparent and Tracestate are the caller's W3C trace context
	// (empty: none).
	Traceparent, Tracestate string
	// Meta is the caller's MCP _meta, a JSON object (nil: none; protocol
	// 3).
	Meta []byte
	// Arguments is the JSON arguments object (empty: none).
	Arguments []byte
}

// appendCallPrefix appends the body of a call frame up to (not
// including) the arguments.
func appendCallPrefix(b []byte, c *CallFrame) []byte {
	flags := byte(0)
	if c.Stream {
		flags = 1
	}
	if len(c.Meta) > 0 {
		flags |= 2
	}
	b = append(b, flags)
	for _, s := range [...]string{c.Name, c.Traceparent, c.Tracestate} {
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
		b = append(b, s...)
	}
	if len(c.Meta) > 0 {
		b = binary.BigEndian.AppendUint32(b, uint32(len(c.Meta)))
		b = append(b, c.Meta...)
	}
	return b
}

// ParseCallFrame decodes a call frame's body; Arguments aliases body.
// Errors: ErrProtocol when the body is cut short or its flags unknown.
func ParseCallFrame(body []byte) (*CallFrame, error) {
	if len(body) < 1 || body[0]&^3 != 0 {
		return nil, fmt.Errorf("%w: bad call flags", ErrProtocol)
	}
	c := &CallFrame{Stream: body[0]&1 == 1}
	rest := body[1:]
	var strs [3]string
	for k := range strs {
		if len(rest) < 2 {
			return nil, fmt.Errorf("%w: call frame cut short", ErrProtocol)
		}
		n := int(binary.BigEndian.Uint16(rest))
		if len(rest) < 2+n {
			return nil, fmt.Errorf("%w: call frame cut short", ErrProtocol)
		}
		strs[k], rest = string(rest[2:2+n]), rest[2+n:]
	}
	c.Name, c.Traceparent, c.Tracestate = strs[0], strs[1], strs[2]
	if body[0]&2 != 0 {
		if len(rest) < 4 {
			return nil, fmt.Errorf("%w: call frame cut short", ErrProtocol)
		}
		n := binary.BigEndian.Uint32(rest)
		if uint64(len(rest)) < 4+uint64(n) {
			return nil, fmt.Errorf("%w: call frame cut short", ErrProtocol)
		}
		c.Meta, rest = rest[4:4+n], rest[4+n:]
	}
	if len(rest) > 0 {
		c.Arguments = rest
	}
	return c, nil
}

// errorBody is the body of an error frame.
func errorBody(code int, message string) []byte {
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(message)), uint32(int32(code)))
	return append(b, message...)
}

// parseErrorBody decodes an error frame's body. Errors: ErrProtocol when
// it is shorter than its code.
func parseErrorBody(body []byte) (*ToolError, error) {
	if len(body) < 4 {
		return nil, fmt.Errorf("%w: error frame cut short", ErrProtocol)
	}
	return &ToolError{Code: int(int32(binary.BigEndian.Uint32(body))), Message: string(body[4:])}, nil
}
