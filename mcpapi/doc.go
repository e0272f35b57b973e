// Package mcpapi serves every function of a host.Host to Model Context
// Protocol clients, with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk): over streamable HTTP at /mcp
// (Handler) and over stdio (Server.Run with mcp.StdioTransport).
//
// One call travels:
//
//	tools/call (the SDK decodes it)     → Server.handle      (call.go)
//	  → host.Host.Call / StreamCall     the host's one call path: route,
//	                                    validate (argcheck), timeout, plugin
//	  ← result / *host.Error            → result or toolError (call.go)
//
// What maps to what (MCP revision 2025-06-18 and later, "Tools"):
//
//	OpenTool                         MCP
//	function name                    tool name (OpenTool names are valid MCP names)
//	description                      description
//	parameters                       inputSchema: {"type":"object","properties",
//	                                 "required"}, $refs inlined (opentool.ParametersJSONSchema)
//	return (an object schema)        outputSchema
//	result object                    structuredContent, plus one text block with the same JSON
//	stream function                  a tool whose result collects the items:
//	                                 structuredContent {"items":[ITEM, ...]}; with a
//	                                 progress token, one notifications/progress per item
//	                                 (progress = items so far, message = the item's JSON)
//	tool error (plugin 400/500)      result with isError: true, text "error CODE: MESSAGE"
//	invalid arguments (-32602)       result with isError: true, text "invalid params: ..."
//	                                 (as the SDK's own typed handlers answer, so the
//	                                 model can correct its call)
//	host failure (exited, timeout,   result with isError: true and the reason
//	busy, failed, stopped, ...)
//	unknown function                 JSON-RPC error -32602 "unknown tool"
//	caller gone, notifications/      the call's context ends: the host cancels the call
//	cancelled                        in the plugin, as for an HTTP disconnect
//
// The tool list follows the host: Follow waits on host.Host.Changed and
// adds, replaces and removes tools, so the SDK sends
// notifications/tools/list_changed when (and only when) the served
// functions changed.
package mcpapi
