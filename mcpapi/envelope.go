package mcpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/opentool-host/opentool-host/internal/strictjson"
	"github.com/opentool-host/opentool-host/jsonrpc"
)

// DefaultMaxBatch is HTTPOptions.MaxBatch's default (--max-batch): the
// most JSON-RPC messages one POST may carry as a batch.
const DefaultMaxBatch = 16

// firstRevisionWithoutBatches is the first MCP revision that removed
// JSON-RPC batches (2025-06-18, "Changelog": "Remove support for JSON-RPC
// batching"); a client that negotiated it or a later one must not send
// one.
const firstRevisionWithoutBatches = "2025-06-18"

// envelopeError is why checkEnvelope refused a POST: the HTTP status and
// the JSON-RPC error to answer with.
type envelopeError struct {
	status int
	code   int
	msg    string
}

// checkEnvelope reads the body of an MCP POST (at most maxBody bytes;
// the SDK answers a larger one) and refuses, before the SDK decodes it
// with encoding/json (which lets the last of two members win, and matches
// names ignoring case):
//   - a body that is not one JSON value: -32700;
//   - a member given twice at any depth, or two members of a message or
//     of its "params" whose names differ only in case ("method" and
//     "METHOD", "name" and "Name"): -32600 (-32602 inside params);
//   - a batch (a JSON array) of more than maxBatch messages, or any batch
//     from a client of revision 2025-06-18 or later (MCP-Protocol-Version),
//     which has no batches: -32600.
//
// The body is put back on r for the SDK. Bodies it cannot read whole
// (over maxBody) are left to the SDK, which refuses them.
func checkEnvelope(r *http.Request, maxBody int64, maxBatch int) *envelopeError {
	if r.Method != http.MethodPost || r.Body == nil {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
	if err != nil || int64(len(body)) > maxBody {
		return nil
	}
	if e := checkBatch(r, body, maxBatch); e != nil {
		return e // before decoding: a huge batch costs no memory
	}
	tree, err := strictjson.Decode(body)
	if err != nil {
		var dup *strictjson.DuplicateError
		if errors.As(err, &dup) {
			return memberError(dup.Path, err)
		}
		return &envelopeError{http.StatusBadRequest, jsonrpc.CodeParseError, "parse error: " + err.Error()}
	}
	msgs := []any{tree}
	if batch, ok := tree.([]any); ok {
		msgs = batch
	}
	for _, m := range msgs {
		if err := strictjson.CheckFolded(m, "params"); err != nil {
			var fe *strictjson.FoldedDuplicateError
			errors.As(err, &fe)
			return memberError(fe.Path, err)
		}
	}
	return nil
}

// checkBatch refuses a batch from a client of a revision without batches,
// and one of more than maxBatch messages, reading no further than the
// message after the limit.
func checkBatch(r *http.Request, body []byte, maxBatch int) *envelopeError {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return nil
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v >= firstRevisionWithoutBatches {
		return &envelopeError{http.StatusBadRequest, jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("invalid request: MCP %s has no JSON-RPC batches (removed in %s): send one message per request", v, firstRevisionWithoutBatches)}
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if _, err := dec.Token(); err != nil {
		return nil // not JSON: Decode says why
	}
	for n := 0; dec.More(); n++ {
		if n == maxBatch {
			return &envelopeError{http.StatusBadRequest, jsonrpc.CodeInvalidRequest,
				fmt.Sprintf("invalid request: a batch of more than %d messages (--max-batch)", maxBatch)}
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
	}
	return nil
}

// memberError is the refusal of a member named twice in the object at
// path: -32602 inside params, -32600 elsewhere.
func memberError(path string, err error) *envelopeError {
	if path == "params" || strings.HasPrefix(path, "params.") || strings.HasPrefix(path, "[") && strings.Contains(path, "].params") {
		return &envelopeError{http.StatusBadRequest, jsonrpc.CodeInvalidParams, "invalid params: " + err.Error()}
	}
	return &envelopeError{http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "invalid request: " + err.Error()}
}
