// Command bounded is a test plugin written with pluginsdk.Func whose
// input carries the constraints of jsonschema tags (minimum, maximum,
// pattern, default, minLength) and a type union. Its one function "pick"
// checks nothing itself and returns what it received, so a call that
// breaks a constraint and still succeeds shows the host let it through.
package main

import (
	"context"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// In is pick's input.
type In struct {
	N    int    `json:"n" jsonschema:"minimum=1,maximum=100,description=From 1 to 100"`
	Code string `json:"code,omitempty" jsonschema:"pattern=^[A-Z]{3}$"`
	Unit string `json:"unit,omitempty" jsonschema:"enum=cm,enum=in,default=cm"`
	Name string `json:"name,omitempty" jsonschema:"minLength=2"`
	ID   any    `json:"id,omitempty" jsonschema:"oneof_type=string;integer"`
}

func main() {
	pluginsdk.Serve(pluginsdk.NewToolkit(opentool.Info{Title: "Bounded", Version: "1"}).
		Add(pluginsdk.Func("pick", "Picks a number from 1 to 100.", func(_ context.Context, in In) (In, error) {
			return in, nil
		})))
}
