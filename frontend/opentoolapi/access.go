package opentoolapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/frontend/keyview"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/internal/strictjson"
	"github.com/opentool-host/opentool-host/protocol/jsonrpc"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// Per-key access (package access). The host refuses a call to a function
// the request's key may not call as an unknown function; here the
// listings show what package catalog says the key finds in them
// (keyview.View.Listed: the functions it may call, the host's own tool
// search functions included, the threshold applied). What a request
// costs of its key's rate limit is told to the front door (Routes), which
// takes it.

// document is the aggregated document as the request's key may see it
// (keyview.View.Listed): only the functions listed to it, and only the
// named schemas of plugins a listed function is of.
//
// run_code's description (--code-mode) is the caller's
// (keyview.CodeDescription): with TypeScript declarations of the tools
// it may call.
func (s *Server) document(r *http.Request) *opentool.OpenTool {
	doc := s.b.Document(s.cfg.Title, s.cfg.Version, baseURL(r))
	if doc == nil {
		return doc
	}
	l := keyview.Of(r.Context(), s.b).Listed()
	desc, code := keyview.CodeDescription(r.Context(), s.b, host.RunCodeName)
	if l.All() && !code {
		return doc
	}
	out := *doc
	out.Functions = make([]opentool.Function, 0, len(doc.Functions))
	for _, f := range doc.Functions {
		if !l.Has(f.Name) {
			continue
		}
		if code && f.Name == host.RunCodeName {
			f.Description = desc
		}
		out.Functions = append(out.Functions, f)
	}
	if l.All() {
		return &out
	}
	out.Schemas = nil
	for k, v := range doc.Schemas {
		if p, _, _ := strings.Cut(k, "."); l.Plugin(p) {
			if out.Schemas == nil {
				out.Schemas = map[string]*opentool.Schema{}
			}
			out.Schemas[k] = v
		}
	}
	return &out
}

// visible reports whether the request's key may call fn, for the stream
// check that runs before the host's own (handleStreamCall).
func (s *Server) visible(ctx context.Context, fn string) bool {
	return keyview.Of(ctx, s.b).Calls(fn)
}

// ignored is the ignored files of the plugins folder for a key that sees
// everything (they name files, not functions); nil otherwise or when the
// Backend does not know them.
func (s *Server) ignored(ctx context.Context) []host.IgnoredFile {
	src, ok := s.b.(interface{ Ignored() []host.IgnoredFile })
	if !ok || access.GrantFrom(ctx).Restricted() {
		return nil
	}
	return src.Ignored()
}

// healthPlugins is the plugins of GET /health as the request's key may
// see them (keyview.View.Plugins): every plugin whole for a key that sees
// everything; else those it may call a function of, with only those
// functions, no conflicts and no stderr.
func (s *Server) healthPlugins(ctx context.Context) []supervise.PluginStatus {
	return keyview.Of(ctx, s.b).Plugins()
}

// refuseCall answers a call (POST /opentool/call, /streamCall) refused by
// its key's rate limit (Routes): HTTP 429 with the JSON-RPC error
// {"code":-32000,"message":"rate limited: too many calls for this API
// key","data":{"retry_after_ms":N}} for its request's id (read from the
// body, null when it has none). A refused listing or task poll gets the
// front door's JSON 429.
func (s *Server) refuseCall(w http.ResponseWriter, r *http.Request, rf *access.Refusal) {
	bp := getBuf()
	defer putBuf(bp)
	body, _ := httpguard.ReadBody(w, r, s.cfg.MaxBodyBytes, *bp)
	*bp = body
	id := strictjson.Member(body, "id")
	if len(id) == 0 || id[0] != '"' && id[0] != '-' && (id[0] < '0' || id[0] > '9') {
		id = nil // no id, or one the decoder would refuse: null
	}
	je := &jsonrpc.Error{Code: access.CodeRateLimited, Message: rf.Message, Data: map[string]any{"retry_after_ms": access.RetryAfterMs(rf.RetryAfter)}}
	s.writeRPC(w, http.StatusTooManyRequests, jsonrpc.AppendError(body[len(body):], je, id))
}
