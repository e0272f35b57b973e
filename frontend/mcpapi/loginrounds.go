package mcpapi

import (
	"context"
	"encoding/json"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host/core"
)

// maxLoginRounds bounds the input_required rounds one call of a
// 2026-07-28 client is given to log in (loginRound): past them the call
// ends with -32042, as a client of 2025-11-25 gets at once.
const maxLoginRounds = 3

// loginRoundsKey is the context key of the number of login rounds a
// call has had.
type loginRoundsKey struct{}

// loginRound answers a call of a 2026-07-28 client (held across rounds by
// package rounds; ask asks its client in a round) that failed with
// needs_login err, the client having declared URL-mode elicitation: an input_required round asking
// elicitation/create in URL mode with the login link (loginElicitation,
// the counterpart of 2025-11-25's -32042, je). When the client's retry
// accepts it (the person has logged in), the call runs again, and its
// result (or its next round) answers the retry; a decline or cancel ends
// it with the isError result that names the link (callError). je answers
// when no round can be asked (over the held calls' caps) or after
// maxLoginRounds.
func (s *Server) loginRound(ctx context.Context, ask func(context.Context, string, []byte) ([]byte, error), req *mcp.CallToolRequest, name string, id clientID, err, je error) (*mcp.CallToolResult, error) {
	n, _ := ctx.Value(loginRoundsKey{}).(int)
	if n >= maxLoginRounds {
		return nil, je
	}
	params, merr := json.Marshal(loginElicitation(core.AsError(err)))
	if merr != nil {
		return nil, je
	}
	raw, aerr := ask(ctx, mcpmethod.ElicitationCreate, params)
	if aerr != nil {
		if ctx.Err() != nil {
			return nil, aerr
		}
		return nil, je
	}
	var r mcp.ElicitResult
	if json.Unmarshal(raw, &r) != nil || r.Action != "accept" {
		return s.callError(name, err)
	}
	return s.call(context.WithValue(ctx, loginRoundsKey{}, n+1), req, name, id, nil)
}
