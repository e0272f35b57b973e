package host

// run_code's description as one caller is shown it (CodeDescription):
// the function's own, then TypeScript declarations of the tools that
// caller may call and its view shows, generated from their input
// schemas, at most maxDeclBytes.

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/opentool-host/opentool-host/host/access"
)

// maxDeclBytes bounds the declarations in run_code's description, in
// bytes; maxDeclDepth the nesting of one schema's type.
const (
	maxDeclBytes = 16 << 10
	maxDeclDepth = 4
)

// identifier matches a name that needs no quotes in TypeScript.
var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// CodeDescription is run_code's description for the caller of ctx:
// run_code's own, then "declare const tools: {...}" with one line per
// function the caller may call (access.Allowed) and its view shows
// (CallView), its description as a comment and its arguments' type from
// its input schema, at most maxDeclBytes (the rest counted: "// N more
// tools, not declared here"). With tool search, run_code's own alone.
// "" without Config.CodeMode.
func (h *Host) CodeDescription(ctx context.Context) string {
	f := h.builtins.function(RunCodeName)
	if f == nil {
		return ""
	}
	if h.cfg.ToolSearch {
		return f.Description
	}
	var b strings.Builder
	b.WriteString(f.Description)
	b.WriteString("\n\ndeclare const tools: {\n")
	view, more := callView(ctx), 0
	for _, rt := range h.routes.Load().order {
		name := rt.fn.Name
		if !access.Allowed(ctx, rt.plugin.Name(), name) {
			continue
		}
		if _, ok := shownBy(ctx, view, rt); !ok {
			continue
		}
		line := declLine(name, rt.fn.Description, inputSchema(rt.fn))
		if b.Len()+len(line) > maxDeclBytes {
			more++
			continue
		}
		b.WriteString(line)
	}
	if more > 0 {
		fmt.Fprintf(&b, "  // %d more tools, not declared here (the description's bound); call them by their listed names\n", more)
	}
	b.WriteString("};")
	return b.String()
}

// declLine is one tool's declaration: "  /** DESCRIPTION */\n  NAME(args:
// TYPE): any;\n" (the description's first line, at most 200 bytes).
func declLine(name, desc string, schema json.RawMessage) string {
	name = tsKey(name)
	desc, _, _ = strings.Cut(desc, "\n")
	if len(desc) > 200 {
		desc = desc[:200] + "..."
	}
	desc = strings.ReplaceAll(desc, "*/", "* /")
	var s any
	_ = json.Unmarshal(schema, &s)
	return fmt.Sprintf("  /** %s */\n  %s(args: %s): any;\n", desc, name, tsType(s, 0))
}

// tsType is JSON Schema s as a TypeScript type: string, number
// (integer too), boolean, null, T[], an object's {name?: T; ...}, an
// enum's union of literals; anything else, or deeper than
// maxDeclDepth, any.
func tsType(s any, depth int) string {
	m, ok := s.(map[string]any)
	if !ok || depth > maxDeclDepth {
		return "any"
	}
	if enum, ok := m["enum"].([]any); ok && len(enum) > 0 {
		lits := make([]string, 0, len(enum))
		for _, v := range enum {
			b, _ := json.Marshal(v)
			lits = append(lits, string(b))
		}
		return strings.Join(lits, " | ")
	}
	t, _ := m["type"].(string)
	switch t {
	case "string", "boolean", "null":
		return t
	case "number", "integer":
		return "number"
	case "array":
		return tsType(m["items"], depth+1) + "[]"
	case "object":
		return tsObject(m, depth)
	}
	return "any"
}

// tsObject is object schema m's type: its properties (those not
// required with "?"), sorted by name.
func tsObject(m map[string]any, depth int) string {
	props, _ := m["properties"].(map[string]any)
	if len(props) == 0 {
		return "Record<string, any>"
	}
	required := map[string]bool{}
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		key := tsKey(name)
		if !required[name] {
			key += "?"
		}
		parts = append(parts, key+": "+tsType(props[name], depth+1))
	}
	return "{" + strings.Join(parts, "; ") + "}"
}

// tsKey is name as a TypeScript member name: as it is when an
// identifier, else quoted.
func tsKey(name string) string {
	if identifier.MatchString(name) {
		return name
	}
	q, _ := json.Marshal(name)
	return string(q)
}
