package opentoolapi

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/protocol/export"
)

// StrictIssueHeader is the response header of GET /opentool/export that
// names, once per function, each function OpenAI strict mode could not be
// applied to: `function "NAME" exported without strict mode: REASON`.
const StrictIssueHeader = "OpenTool-Strict-Issue"

// handleExport serves GET /opentool/export?format=F[&strict=true]: every
// served function as the tool definitions of an LLM API (package export),
// the same JSON `opentool-host export` prints: an array for openai,
// openai-chat and anthropic, the aggregated document for opentool.
//
// strict takes the values of strconv.ParseBool; defer_loading=true (with
// format=anthropic or openai) gives export.Deferred (through
// export.Export): the provider's tool search tool, then every tool with
// "defer_loading": true. Functions strict mode cannot take are exported non-strict and
// each named in a StrictIssueHeader header. HTTP 400 with
// {"error":{"code":400,"message"}} for a missing or unknown format, a bad
// strict value, or strict with a format other than openai and
// openai-chat.
func (s *Server) handleExport(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	format, err := export.ParseFormat(q.Get("format"))
	if err != nil {
		s.writeExportError(w, http.StatusBadRequest, strings.TrimPrefix(err.Error(), "export: "))
		return
	}
	strict := false
	if v := q.Get("strict"); v != "" {
		if strict, err = strconv.ParseBool(v); err != nil {
			s.writeExportError(w, http.StatusBadRequest, "strict must be true or false, got "+quote(v))
			return
		}
	}
	var deferred bool
	if v := q.Get("defer_loading"); v != "" {
		if deferred, err = strconv.ParseBool(v); err != nil || (deferred && format != export.Anthropic && format != export.OpenAI) {
			s.writeExportError(w, http.StatusBadRequest, "defer_loading=true applies only to format anthropic and openai, got "+quote(v)+" with "+string(format))
			return
		}
	}
	out, issues, err := export.Export(s.document(r), export.Options{Format: format, Strict: strict, DeferLoading: deferred})
	switch {
	case errors.Is(err, export.ErrStrictUnsupported):
		s.writeExportError(w, http.StatusBadRequest, "strict=true applies only to format openai and openai-chat, not "+string(format))
		return
	case err != nil:
		s.cfg.Logger.Error("export failed", "format", format, "error", err)
		s.writeExportError(w, http.StatusInternalServerError, err.Error())
		return
	}
	h := w.Header()
	for _, is := range issues {
		h.Add(StrictIssueHeader, is.String())
	}
	httpguard.Write(w, http.StatusOK, httpguard.JSON, out, s.cfg.WriteTimeout)
}

// writeExportError writes {"error":{"code":STATUS,"message":MSG}} with
// HTTP status (the shape of the API's other non-JSON-RPC errors).
func (s *Server) writeExportError(w http.ResponseWriter, status int, msg string) {
	type body struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	s.writeJSON(w, status, map[string]body{"error": {Code: status, Message: msg}})
}
