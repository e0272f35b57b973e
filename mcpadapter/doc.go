// Package mcpadapter runs an existing MCP server as an opentool-host
// plugin. The host starts its own binary as "opentool-host adapter"
// for each server declared in a NAME.mcp.json file (package
// internal/decl), supervised like any plugin: a copy by sha256, its own
// process group, a parent-death signal, restarts with backoff, blue/green
// replacement when the declaration changes. The adapter is an MCP client
// (the official Go SDK): it starts the server (mcp.CommandTransport) or
// reaches it (mcp.StreamableClientTransport), lists its tools, serves
// them as an OpenTool document (pluginsdk), follows
// notifications/tools/list_changed (pluginsdk.DocumentWatcher: the host
// serves the new list without a restart), and forwards calls and their
// cancellation (notifications/cancelled).
//
// MCP → OpenTool:
//
//	tool name                 function name; bytes outside [a-zA-Z0-9_-] become "_",
//	                          cut to 64, a clash gets "_2", "_3" (calls use the MCP name)
//	title, description,       description ("TITLE. DESCRIPTION (read-only, destructive,
//	annotations               idempotent)")
//	inputSchema               one parameter per property (description, schema,
//	                          required); additionalProperties → additionalParameters;
//	                          local $refs inlined (opentool.FromJSONSchema)
//	inputSchema OpenTool      the tool is left out, logged with the JSON path of the
//	cannot express (allOf,    construct; the server's other tools are served
//	not, tuple items, ...)
//	outputSchema              return "result" (left out when it does not convert)
//	structuredContent object  the result object as is
//	other results             {"content": [MCP content blocks], "text": "joined text"}
//	isError result            tool error 500 with the text
//	JSON-RPC -32602           tool error 400 (invalid arguments)
//	other failures            tool error 500
//	server exits              the adapter exits 1: a crash, restarted with backoff
//	no initialize answer      Load fails: "MCP server NAME did not answer initialize
//	                          within ..."; the plugin fails with that reason
package mcpadapter
