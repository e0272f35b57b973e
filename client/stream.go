package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
)

// StreamCall calls streaming function fc.Name through POST
// {base}/streamCall and hands each item to onItem, in order, as a
// ToolReturn with ID fc.ID (generated when empty). It returns nil after
// the server's done event.
//
// The response is a server-sent event stream: event:start, one event:data
// per item ({"jsonrpc":"2.0","result":ITEM,"id":ID}), then event:done, or
// event:error with a JSON-RPC error response. The parser accepts frames
// split across reads, "\n", "\r\n" or "\r" line ends, comments and unknown
// events. A plain JSON-RPC response instead of a stream (the server
// rejected the request before streaming) is read as for Call: its error is
// returned, or its result handed to onItem.
//
// Errors: onItem's own error (returned as is; the stream is closed, which
// cancels it on the server); *CallError for an error event or a rejected
// request (e.g. code -32600 for a function that does not stream);
// *UnauthorizedError; *NoAccessError; io.ErrUnexpectedEOF (wrapped) when
// the stream ends without done; the context's error.
func (c *Client) StreamCall(ctx context.Context, fc FunctionCall, onItem func(ToolReturn) error) error {
	id, req, err := requestBody(fc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // on early return, stops the request before the body is drained
	resp, err := c.do(ctx, http.MethodPost, "/streamCall", req, "text/event-stream")
	if err != nil {
		return err
	}
	defer resp.Body.Close()

	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		body, err := readBody(resp)
		if err != nil {
			return err
		}
		result, err := decodeResponse(body, resp.StatusCode)
		if err != nil {
			return err
		}
		return onItem(ToolReturn{ID: id, Result: result})
	}

	err = readSSE(resp.Body, func(event string, data []byte) error {
		switch event {
		case "data":
			result, err := decodeResponse(data, resp.StatusCode)
			if err != nil {
				return err
			}
			return onItem(ToolReturn{ID: id, Result: result})
		case "error":
			if _, err := decodeResponse(data, resp.StatusCode); err != nil {
				return err
			}
			return &ErrorNullError{Code: resp.StatusCode} // an error event without an error
		case "done":
			return errStreamDone
		}
		return nil // "start", comments and unknown events
	})
	switch {
	case errors.Is(err, errStreamDone):
		return nil
	case err != nil:
		if ctx.Err() != nil {
			return fmt.Errorf("opentool client: stream of %q: %w", fc.Name, ctx.Err())
		}
		return err
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("opentool client: stream of %q: %w", fc.Name, cerr)
	}
	return fmt.Errorf("opentool client: the stream of %q ended without a done event: %w", fc.Name, io.ErrUnexpectedEOF)
}

// errStreamDone stops readSSE at the done event.
var errStreamDone = errors.New("stream done")

// readSSE reads a server-sent event stream (the WHATWG "event stream"
// format) from r and calls fn once per event with its name ("message"
// when it has none) and its data lines joined by "\n". It returns fn's
// first error, the read error, or nil at EOF; an event cut off by EOF is
// dropped. Lines may end in "\n", "\r\n" or "\r" and be split across
// reads anywhere; a line may be up to MaxResponseBytes long.
func readSSE(r io.Reader, fn func(event string, data []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxResponseBytes)
	sc.Split(scanSSELines)
	var (
		event   string
		data    []byte
		hasData bool
	)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 { // dispatch
			if hasData {
				name := event
				if name == "" {
					name = "message"
				}
				if err := fn(name, data); err != nil {
					return err
				}
			}
			event, data, hasData = "", data[:0], false
			continue
		}
		if line[0] == ':' { // comment
			continue
		}
		field, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(field) {
		case "event":
			event = string(value)
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("opentool client: a stream line is longer than %d bytes: %w", MaxResponseBytes, err)
		}
		return fmt.Errorf("opentool client: reading the stream: %w", err)
	}
	return nil
}

// scanSSELines is a bufio.SplitFunc for lines ending in "\n", "\r\n" or
// "\r". A "\r" at the end of the buffered data waits for the next byte, to
// tell "\r\n" from "\r".
func scanSSELines(data []byte, atEOF bool) (int, []byte, error) {
	i := bytes.IndexAny(data, "\r\n")
	switch {
	case i < 0 && atEOF && len(data) > 0:
		return len(data), data, nil
	case i < 0:
		return 0, nil, nil
	case data[i] == '\n':
		return i + 1, data[:i], nil
	case i+1 < len(data): // '\r' with a byte after it
		if data[i+1] == '\n' {
			return i + 2, data[:i], nil
		}
		return i + 1, data[:i], nil
	case atEOF:
		return i + 1, data[:i], nil
	}
	return 0, nil, nil // '\r' last: need one more byte
}
