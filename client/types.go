package client

import (
	"encoding/json"
	"fmt"
)

// Version is the body of GET /opentool/version (client/server protocol
// 1.0.0, section 1): {"version":"x.y.z"}.
type Version struct {
	// Version is the server's version, "x.y.z".
	Version string `json:"version"`
}

// FunctionCall is one call of a function (section 4 FunctionCall). Its
// JSON form is {"id":ID,"name":NAME,"arguments":{...}}, as in the
// reference SDKs; nil Arguments encode as {}.
type FunctionCall struct {
	// ID is the call id sent as the JSON-RPC "id". Empty: the client
	// generates a random one (32 hex digits).
	ID string `json:"id"`
	// Name is the function's name (the JSON-RPC "method").
	Name string `json:"name"`
	// Arguments are the function's arguments by parameter name (the
	// JSON-RPC "params"); nil means none.
	Arguments map[string]any `json:"arguments"`
}

// MarshalJSON encodes {"id","name","arguments"}, with "arguments": {} for
// nil Arguments.
func (fc FunctionCall) MarshalJSON() ([]byte, error) {
	type plain FunctionCall
	p := plain(fc)
	if p.Arguments == nil {
		p.Arguments = map[string]any{}
	}
	return json.Marshal(p)
}

// FunctionCallFromJSON decodes {"id","name","arguments"} (the reference
// SDKs' FunctionCall.fromJson). "name" is required; a missing or null
// "arguments" gives an empty map.
func FunctionCallFromJSON(data []byte) (FunctionCall, error) {
	var fc FunctionCall
	if err := json.Unmarshal(data, &fc); err != nil {
		return FunctionCall{}, fmt.Errorf("opentool client: decode FunctionCall: %w", err)
	}
	if fc.Name == "" {
		return FunctionCall{}, fmt.Errorf("opentool client: decode FunctionCall: \"name\" is missing or empty")
	}
	if fc.Arguments == nil {
		fc.Arguments = map[string]any{}
	}
	return fc, nil
}

// ToolReturn is the result of one call (section 4 ToolReturn). Its JSON
// form is {"id":ID,"result":{...}}; nil Result encodes as {}.
type ToolReturn struct {
	// ID is the id of the FunctionCall it answers.
	ID string `json:"id"`
	// Result is the function's JSON result object. Numbers decode as
	// float64, as with encoding/json.
	Result map[string]any `json:"result"`
}

// MarshalJSON encodes {"id","result"}, with "result": {} for nil Result.
func (tr ToolReturn) MarshalJSON() ([]byte, error) {
	type plain ToolReturn
	p := plain(tr)
	if p.Result == nil {
		p.Result = map[string]any{}
	}
	return json.Marshal(p)
}

// ToolReturnFromJSON decodes {"id","result"} (the reference SDKs'
// ToolReturn.fromJson); a missing or null "result" gives an empty map.
func ToolReturnFromJSON(data []byte) (ToolReturn, error) {
	var tr ToolReturn
	if err := json.Unmarshal(data, &tr); err != nil {
		return ToolReturn{}, fmt.Errorf("opentool client: decode ToolReturn: %w", err)
	}
	if tr.Result == nil {
		tr.Result = map[string]any{}
	}
	return tr, nil
}
