package argcheck

// A declared MCP server's tool (opentool.Function.MCPTool set) is called
// as the server's own client would call it: an MCP client sends the
// arguments its user gave and leaves judging them to the server (MCP
// 2025-11-25, "Tools": servers MUST validate all tool inputs). The host
// still checks them against the tool's inputSchema, with one exception: a
// null given for a parameter the schema declares but does not require
// ("verbose": null for an optional boolean) is not refused by the host;
// the arguments go upstream as given and the server judges the null
// (SEP-2243's test server expects it, and omits the Mcp-Param-* header of
// a null). A null for a required parameter, for an undeclared one, or
// deeper inside a parameter's value is still checked as any value is.

// optionalParams returns the names of the top-level properties js declares
// and does not list in its "required", the parameters whose null the
// server judges; nil when js declares none.
func optionalParams(js map[string]any) map[string]bool {
	props, _ := js["properties"].(map[string]any)
	if len(props) == 0 {
		return nil
	}
	opt := make(map[string]bool, len(props))
	for name := range props {
		opt[name] = true
	}
	req, _ := js["required"].([]any)
	for _, r := range req {
		if name, ok := r.(string); ok {
			delete(opt, name)
		}
	}
	if len(opt) == 0 {
		return nil
	}
	return opt
}

// withoutServerNulls returns inst, a call's decoded arguments, without the
// members v leaves to the server (a null for an optional parameter of a
// declared MCP server's tool: optionalParams); inst itself when it has
// none. The arguments sent upstream are not changed: only what the host
// validates.
func (v *Validator) withoutServerNulls(inst any) any {
	obj, ok := inst.(map[string]any)
	if !ok || len(v.serverNulls) == 0 {
		return inst
	}
	var out map[string]any
	for name, val := range obj {
		if val != nil || !v.serverNulls[name] {
			continue
		}
		if out == nil {
			out = make(map[string]any, len(obj))
			for k, x := range obj {
				out[k] = x
			}
		}
		delete(out, name)
	}
	if out == nil {
		return inst
	}
	return out
}
