// Package mcpresult projects an MCP tool result (CallToolResult, MCP
// 2025-11-25 "Server Features: Tools", Tool Result) onto an OpenTool
// result object, for the callers that take only objects: OpenTool's
// /opentool/call, Open Tool Calling, the CLI, and a plugin's own Call.
// MCP clients of the host receive the MCP result as the plugin returned
// it; everyone else gets this projection, the one documented in
// docs/writing-plugins.md and declared/mcpadapter/doc.go:
//
//	CallToolResult                     OpenTool
//	inputRequests (an input_required   tool error 500: only an MCP client can
//	round, MCP 2026-07-28 SEP-2322)    answer it (roundMessage)
//	isError: true                      tool error 500, message the text blocks'
//	                                   text joined by "\n" ("the MCP tool reported
//	                                   an error without text" when there is none)
//	structuredContent, an object       the result: that object as sent
//	structuredContent, another value   {"result": VALUE}
//	no structuredContent               {"content": [BLOCKS], "text": TEXT}: the
//	                                   content blocks as sent, TEXT the text
//	                                   blocks' text joined by "\n" ("" if none)
package mcpresult

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ToolError is the projection of a result with isError: a tool error
// (code 500 on the OpenTool side) with the result's text.
type ToolError struct {
	// Message is the text blocks' text joined by newlines.
	Message string
}

// Error implements error.
func (e *ToolError) Error() string { return e.Message }

// ErrNotResult is wrapped by Project's error when b is not an MCP
// CallToolResult (not a JSON object, content not an array).
var ErrNotResult = errors.New("not an MCP CallToolResult")

// result is the part of a CallToolResult the projection reads.
type result struct {
	Content           json.RawMessage `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
	InputRequests     json.RawMessage `json:"inputRequests"`
}

// roundMessage is the projection's tool error for an input_required round.
const roundMessage = "the function asked its caller for input (an input_required round of MCP 2026-07-28), which only an MCP client can answer"

// block is the part of a content block the projection reads.
type block struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Project returns the OpenTool result object of the MCP CallToolResult
// b (the table in the package comment). Errors: a *ToolError for an
// isError result; ErrNotResult wrapped when b is not a CallToolResult.
func Project(b []byte) ([]byte, error) {
	var r result
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrNotResult)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotResult, err)
	}
	var blocks []block
	content := bytes.TrimSpace(r.Content)
	if len(content) == 0 || string(content) == "null" {
		content = []byte("[]")
	} else if err := json.Unmarshal(content, &blocks); err != nil {
		return nil, fmt.Errorf("%w: content is not an array of content blocks", ErrNotResult)
	}
	text := joinText(blocks)
	sc := bytes.TrimSpace(r.StructuredContent)
	switch ir := bytes.TrimSpace(r.InputRequests); {
	case len(ir) > 0 && string(ir) != "null":
		return nil, &ToolError{Message: roundMessage}
	case r.IsError:
		if text == "" {
			text = "the MCP tool reported an error without text"
		}
		return nil, &ToolError{Message: text}
	case len(sc) > 0 && string(sc) != "null":
		if sc[0] == '{' {
			return sc, nil
		}
		return json.Marshal(map[string]json.RawMessage{"result": sc})
	}
	return json.Marshal(struct {
		Content json.RawMessage `json:"content"`
		Text    string          `json:"text"`
	}{content, text})
}

// joinText is the text of the text blocks among blocks, joined by newlines.
func joinText(blocks []block) string {
	var texts []string
	for _, c := range blocks {
		if c.Type == "text" {
			texts = append(texts, c.Text)
		}
	}
	return strings.Join(texts, "\n")
}
