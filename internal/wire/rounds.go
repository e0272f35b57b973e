package wire

// Multi-round-trip requests (MCP 2026-07-28, SEP-2322) of a plugin's own:
// a function returns an input_required MCP result (inputRequests under
// keys it names, its requestState), and its call is made again with the
// client's answers. The retry travels in the call's meta (Call.meta, the
// caller's _meta) under these members, which the host sets and removes
// from what the client sent; nothing else of the protocol changes.
const (
	// MetaInputResponses is the member of a call's meta whose value is
	// the retry's inputResponses: a JSON object of the client's answers
	// (an ElicitResult, CreateMessageResult or ListRootsResult) by the
	// keys of the plugin's inputRequests. Absent: not a retry.
	MetaInputResponses = "io.opentool-host/inputResponses"
	// MetaRequestState is the member of a call's meta whose value is the
	// retry's requestState (a JSON string) as the plugin wrote it in its
	// round, unread by the host. Absent: none.
	MetaRequestState = "io.opentool-host/requestState"
)
