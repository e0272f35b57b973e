package toolsearch

import "encoding/json"

// The meta-tools of --tool-search: a client that cannot be sent the whole
// catalog searches it, then calls what it found.
const (
	// SearchToolName is the tool that searches the catalog: arguments
	// {"query": string, "limit": integer 1..MaxLimit (default
	// DefaultLimit)}; result {"tools": [{"name", "description",
	// "inputSchema"}, ...]} (MCP: its structuredContent), most relevant
	// first, only tools the caller may call.
	SearchToolName = "search_tools"
	// CallToolName is the tool that calls any tool of the catalog the
	// caller may call: arguments {"name": string, "arguments": object};
	// its result is the called tool's.
	CallToolName = "call_tool"
)

// MetaTools returns the definitions of the two meta-tools (SearchToolName,
// CallToolName) as an MCP tools/list shows them: name, description,
// inputSchema, and for SearchToolName outputSchema. The host serves them
// as its own functions (core.Config.ToolSearch).
func MetaTools() []Tool {
	return []Tool{
		{
			Name: SearchToolName,
			Description: "Search this server's tools by what you want to do. Returns the most relevant tools with their input schemas; " +
				"call one with " + CallToolName + ". Use it before assuming a tool does not exist.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` +
				`"query":{"type":"string","minLength":1,"maxLength":1024,"description":"what you want to do, in a few words"},` +
				`"limit":{"type":"integer","minimum":1,"maximum":50,"default":5,"description":"how many tools to return"}},` +
				`"required":["query"],"additionalProperties":false}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"tools":{"type":"array","items":{"type":"object","properties":{` +
				`"name":{"type":"string"},"description":{"type":"string"},"inputSchema":{"type":"object"}},"required":["name","description","inputSchema"]}}},` +
				`"required":["tools"]}`),
		},
		{
			Name:        CallToolName,
			Description: "Call a tool found with " + SearchToolName + " by its name, with arguments that match its input schema.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{` +
				`"name":{"type":"string","minLength":1,"description":"the tool's name, as search_tools returned it"},` +
				`"arguments":{"type":"object","description":"the tool's arguments"}},` +
				`"required":["name"],"additionalProperties":false}`),
		},
	}
}
