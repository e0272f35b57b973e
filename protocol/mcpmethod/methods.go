package mcpmethod

import (
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The names of the MCP methods, the only place the host writes them
// (MCP 2025-11-25 and 2026-07-28, "Base Protocol", "Server Features",
// "Client Features", "Utilities"; the Tasks extension,
// io.modelcontextprotocol/tasks).
const (
	Initialize             = "initialize"
	Ping                   = "ping"
	Discover               = "server/discover"
	Initialized            = "notifications/initialized"
	Cancelled              = "notifications/cancelled"
	Progress               = "notifications/progress"
	ToolsList              = "tools/list"
	ToolsCall              = "tools/call"
	ToolsListChanged       = "notifications/tools/list_changed"
	ResourcesList          = "resources/list"
	ResourcesTemplatesList = "resources/templates/list"
	ResourcesRead          = "resources/read"
	ResourcesSubscribe     = "resources/subscribe"
	ResourcesUnsubscribe   = "resources/unsubscribe"
	ResourcesUpdated       = "notifications/resources/updated"
	ResourcesListChanged   = "notifications/resources/list_changed"
	PromptsList            = "prompts/list"
	PromptsGet             = "prompts/get"
	PromptsListChanged     = "notifications/prompts/list_changed"
	LoggingSetLevel        = "logging/setLevel"
	LoggingMessage         = "notifications/message"
	CompletionComplete     = "completion/complete"
	SamplingCreateMessage  = "sampling/createMessage"
	ElicitationCreate      = "elicitation/create"
	ElicitationComplete    = "notifications/elicitation/complete"
	RootsList              = "roots/list"
	RootsListChanged       = "notifications/roots/list_changed"
	SubscriptionsListen    = "subscriptions/listen"
	SubscriptionsAck       = "notifications/subscriptions/acknowledged"
	TasksGet               = "tasks/get"
	TasksResult            = "tasks/result"
	TasksList              = "tasks/list"
	TasksCancel            = "tasks/cancel"
	TasksUpdate            = "tasks/update"
	TasksStatus            = "notifications/tasks/status"
	TasksNotify            = "notifications/tasks"
)

// TasksExtension is the Tasks extension's identifier, the Needs of its
// methods (host/tasks/mcptasks.Extension is the same string).
const TasksExtension = "io.modelcontextprotocol/tasks"

// t is the reflect.Type of T, a row's params or result type.
func t[T any]() reflect.Type { return reflect.TypeFor[T]() }

// table is the table: one row per method, in the order of the spec's
// sections. The tasks' params and results are host/tasks/mcptasks' (the
// SDK has none): Params and Result nil.
var table = []Method{
	// Lifecycle and utilities.
	{Name: Initialize, Dir: ToServer, Params: t[*mcp.InitializeParams](), Result: t[*mcp.InitializeResult](), Route: Host, Revisions: ToR20251125},
	{Name: Initialized, Dir: NoteToServer, Params: t[*mcp.InitializedParams](), Route: Host, Revisions: ToR20251125},
	{Name: Ping, Dir: ToServer, Params: t[*mcp.PingParams](), Route: Host, Revisions: ToR20251125},
	{Name: Discover, Dir: ToServer, Params: t[*mcp.DiscoverParams](), Result: t[*mcp.DiscoverResult](), Route: Host, Revisions: R20260728},
	{Name: Cancelled, Dir: NoteEither, Params: t[*mcp.CancelledParams](), Route: Caller, Revisions: FromR20241105},
	{Name: Progress, Dir: NoteEither, Params: t[*mcp.ProgressNotificationParams](), Route: Caller, Revisions: FromR20241105},

	// Tools.
	{Name: ToolsList, Dir: ToServer, Params: t[*mcp.ListToolsParams](), Result: t[*mcp.ListToolsResult](), Needs: "tools", Route: Host, Revisions: FromR20241105},
	{Name: ToolsCall, Dir: ToServer, Params: t[*mcp.CallToolParams](), Result: t[*mcp.CallToolResult](), Needs: "tools", Route: Plugin, Key: ByName, Revisions: FromR20241105},
	{Name: ToolsListChanged, Dir: NoteToClient, Params: t[*mcp.ToolListChangedParams](), Needs: "tools.listChanged", Route: Lists, Revisions: FromR20241105},

	// Resources.
	{Name: ResourcesList, Dir: ToServer, Params: t[*mcp.ListResourcesParams](), Result: t[*mcp.ListResourcesResult](), Needs: "resources", Route: Host, Revisions: FromR20241105},
	{Name: ResourcesTemplatesList, Dir: ToServer, Params: t[*mcp.ListResourceTemplatesParams](), Result: t[*mcp.ListResourceTemplatesResult](), Needs: "resources", Route: Host, Revisions: FromR20241105},
	{Name: ResourcesRead, Dir: ToServer, Params: t[*mcp.ReadResourceParams](), Result: t[*mcp.ReadResourceResult](), Needs: "resources", Route: Plugin, Key: ByURI, Revisions: FromR20241105},
	{Name: ResourcesSubscribe, Dir: ToServer, Params: t[*mcp.SubscribeParams](), Needs: "resources.subscribe", Route: Plugin, Key: ByURI, Revisions: ToR20251125},
	{Name: ResourcesUnsubscribe, Dir: ToServer, Params: t[*mcp.UnsubscribeParams](), Needs: "resources.subscribe", Route: Plugin, Key: ByURI, Revisions: ToR20251125},
	{Name: ResourcesUpdated, Dir: NoteToClient, Params: t[*mcp.ResourceUpdatedNotificationParams](), Needs: "resources.subscribe", Route: Lists, Revisions: FromR20241105},
	{Name: ResourcesListChanged, Dir: NoteToClient, Params: t[*mcp.ResourceListChangedParams](), Needs: "resources.listChanged", Route: Lists, Revisions: FromR20241105},

	// Prompts.
	{Name: PromptsList, Dir: ToServer, Params: t[*mcp.ListPromptsParams](), Result: t[*mcp.ListPromptsResult](), Needs: "prompts", Route: Host, Revisions: FromR20241105},
	{Name: PromptsGet, Dir: ToServer, Params: t[*mcp.GetPromptParams](), Result: t[*mcp.GetPromptResult](), Needs: "prompts", Route: Plugin, Key: ByName, Revisions: FromR20241105},
	{Name: PromptsListChanged, Dir: NoteToClient, Params: t[*mcp.PromptListChangedParams](), Needs: "prompts.listChanged", Route: Lists, Revisions: FromR20241105},

	// Logging and completion.
	{Name: LoggingSetLevel, Dir: ToServer, Params: t[*mcp.SetLoggingLevelParams](), Needs: "logging", Route: Host, Revisions: ToR20251125},
	{Name: LoggingMessage, Dir: NoteToClient, Params: t[*mcp.LoggingMessageParams](), Needs: "logging", Route: Caller, Revisions: FromR20241105},
	{Name: CompletionComplete, Dir: ToServer, Params: t[*mcp.CompleteParams](), Result: t[*mcp.CompleteResult](), Needs: "completions", Route: Plugin, Key: ByRef, Revisions: FromR20241105},

	// Client features: a server's requests, passed on to the caller.
	{Name: SamplingCreateMessage, Dir: ToClient, Params: t[*mcp.CreateMessageWithToolsParams](), Result: t[*mcp.CreateMessageWithToolsResult](), Needs: "sampling", Route: Caller, Revisions: FromR20241105},
	{Name: ElicitationCreate, Dir: ToClient, Params: t[*mcp.ElicitParams](), Result: t[*mcp.ElicitResult](), Needs: "elicitation", Route: Caller, Revisions: FromR20250618},
	{Name: ElicitationComplete, Dir: NoteToClient, Params: t[*mcp.ElicitationCompleteParams](), Needs: "elicitation.url", Route: NotRelayed, Revisions: FromR20251125},
	{Name: RootsList, Dir: ToClient, Params: t[*mcp.ListRootsParams](), Result: t[*mcp.ListRootsResult](), Needs: "roots", Route: Caller, Revisions: FromR20241105},
	{Name: RootsListChanged, Dir: NoteToServer, Params: t[*mcp.RootsListChangedParams](), Needs: "roots.listChanged", Route: Host, Revisions: ToR20251125},

	// Subscriptions of 2026-07-28 (SEP-2575's listen stream).
	{Name: SubscriptionsListen, Dir: ToServer, Params: t[*mcp.SubscriptionsListenParams](), Result: t[*mcp.SubscriptionsListenResult](), Route: Host, Revisions: R20260728},
	{Name: SubscriptionsAck, Dir: NoteToClient, Params: t[*mcp.SubscriptionsAcknowledgedParams](), Route: Host, Revisions: R20260728},

	// Tasks: the core tasks of 2025-11-25 (capabilities.tasks) and the
	// extension (TasksExtension) of 2026-07-28.
	{Name: TasksGet, Dir: ToServer, Needs: "tasks", Route: Host, Revisions: FromR20251125},
	{Name: TasksResult, Dir: ToServer, Needs: "tasks", Route: Host, Revisions: R20251125},
	{Name: TasksList, Dir: ToServer, Needs: "tasks.list", Route: Host, Revisions: R20251125},
	{Name: TasksCancel, Dir: ToServer, Needs: "tasks.cancel", Route: Host, Revisions: FromR20251125},
	{Name: TasksUpdate, Dir: ToServer, Needs: TasksExtension, Route: Host, Revisions: R20260728},
	{Name: TasksStatus, Dir: NoteToClient, Needs: "tasks", Route: Host, Revisions: R20251125},
	{Name: TasksNotify, Dir: NoteToClient, Needs: TasksExtension, Route: Host, Revisions: R20260728},
}
