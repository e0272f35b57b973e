package opentoolapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/protocol/jsonrpc"
)

// handleCall serves POST /opentool/call (client/server protocol 1.0.0,
// section 2): a JSON-RPC 2.0 request in, a JSON-RPC response out. HTTP
// 200 for results and call errors; 400 for -32700 and -32600; 413 for a
// body over MaxBodyBytes; 415 for a non-JSON Content-Type. With
// Config.Tasks, a request with "Prefer: respond-async" may be answered
// with HTTP 202 and a task instead (tasks.go).
func (s *Server) handleCall(w http.ResponseWriter, r *http.Request) {
	bp := getBuf()
	defer putBuf(bp)

	req, ok := s.decodeCall(w, r, bp)
	if !ok {
		return
	}
	if s.cfg.Tasks != nil {
		if after, async := preferAsync(r.Header, s.cfg.Tasks.After()); async {
			s.callAsTask(w, r, req, after, bp)
			return
		}
	}
	result, err := s.b.Call(callContext(r, req), req.Method, req.Params)
	out := (*bp)[len(*bp):]
	if err != nil {
		je := s.rpcError(r.Context(), req.Method, err)
		if je == nil { // the client went away
			return
		}
		s.writeRPC(w, http.StatusOK, jsonrpc.AppendError(out, je, req.ID))
		return
	}
	*bp = jsonrpc.AppendResult(out, result, req.ID)
	s.writeRPC(w, http.StatusOK, *bp)
}

// callContext is the request's context carrying who calls (core.Caller):
// this front end and the JSON-RPC id (the API key's name comes from the
// access middleware).
func callContext(r *http.Request, req *jsonrpc.Request) context.Context {
	return core.WithCaller(r.Context(), core.Caller{FrontEnd: FrontEnd, CallID: strings.Trim(string(req.ID), `"`)})
}

// decodeCall reads and decodes the request into *bp; when it is not a
// usable request it writes the JSON-RPC error response and returns false.
func (s *Server) decodeCall(w http.ResponseWriter, r *http.Request, bp *[]byte) (*jsonrpc.Request, bool) {
	req, status, rerr := s.readRequest(w, r, bp)
	if rerr == nil {
		return req, true
	}
	var id []byte
	if req != nil {
		id = req.ID
	}
	s.writeRPC(w, status, jsonrpc.AppendError((*bp)[len(*bp):], rerr, id))
	return nil, false
}

// readRequest reads (httpguard.ReadBody) and decodes the body into *bp.
// On error it returns the HTTP status and the JSON-RPC error to answer
// with: the body's own status (413, 415, 400) with -32600, or 400 with
// the decoder's -32700 or -32600.
func (s *Server) readRequest(w http.ResponseWriter, r *http.Request, bp *[]byte) (*jsonrpc.Request, int, *jsonrpc.Error) {
	body, berr := httpguard.ReadBody(w, r, s.cfg.MaxBodyBytes, *bp)
	*bp = body
	if berr != nil {
		code := jsonrpc.CodeInvalidRequest
		if berr.Status == http.StatusBadRequest {
			code = jsonrpc.CodeParseError
		}
		return nil, berr.Status, &jsonrpc.Error{Code: code, Message: "invalid request: " + berr.Message}
	}
	req, rerr := jsonrpc.DecodeRequest(body)
	if rerr != nil {
		return req, http.StatusBadRequest, rerr
	}
	return req, 0, nil
}

// writeRPC writes a JSON-RPC response body under the write deadline.
func (s *Server) writeRPC(w http.ResponseWriter, status int, body []byte) {
	httpguard.Write(w, status, httpguard.JSON, body, s.cfg.WriteTimeout)
}
