package httpapi

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/opentool-host/opentool-host/jsonrpc"
)

// handleCall serves POST /opentool/call (client/server protocol 1.0.0,
// section 2): a JSON-RPC 2.0 request in, a JSON-RPC response out. HTTP
// 200 for results and call errors; 400 for -32700 and -32600; 413 for a
// body over MaxBodyBytes; 415 for a non-JSON Content-Type.
func (s *Server) handleCall(w http.ResponseWriter, r *http.Request) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)

	req, ok := s.decodeCall(w, r, bp)
	if !ok {
		return
	}
	result, err := s.b.Call(r.Context(), req.Method, req.Params)
	out := (*bp)[len(*bp):]
	if err != nil {
		je := s.rpcError(req.Method, err)
		if je == nil { // the client went away
			return
		}
		s.writeRPC(w, http.StatusOK, jsonrpc.AppendError(out, je, req.ID))
		return
	}
	s.writeRPC(w, http.StatusOK, jsonrpc.AppendResult(out, result, req.ID))
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

// readRequest reads and decodes the body into *bp. On error it returns
// the HTTP status and the JSON-RPC error to answer with.
func (s *Server) readRequest(w http.ResponseWriter, r *http.Request, bp *[]byte) (*jsonrpc.Request, int, *jsonrpc.Error) {
	if ct := r.Header.Get("Content-Type"); ct != "" && ct != "application/json" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && mt != "text/plain" && mt != "application/json-rpc") {
			return nil, http.StatusUnsupportedMediaType, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
				Message: "invalid request: Content-Type must be application/json, got " + quote(ct)}
		}
	}
	body, err := readAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes), (*bp)[:0])
	*bp = body
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, http.StatusRequestEntityTooLarge, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
				Message: "invalid request: body larger than the limit of " + itoa(mbe.Limit) + " bytes"}
		}
		return nil, http.StatusBadRequest, &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "parse error: reading body: " + err.Error()}
	}
	req, rerr := jsonrpc.DecodeRequest(body)
	if rerr != nil {
		return req, http.StatusBadRequest, rerr
	}
	return req, 0, nil
}

// readAll appends r's content to buf.
func readAll(r io.Reader, buf []byte) ([]byte, error) {
	bb := bytes.NewBuffer(buf)
	_, err := bb.ReadFrom(r)
	return bb.Bytes(), err
}

func (s *Server) writeRPC(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	if len(body) > 2048 {
		// net/http sends Content-Length itself only for the bodies it
		// buffers whole (2 KiB); a larger one would go out chunked.
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

var jsonContentType = []string{"application/json"}
