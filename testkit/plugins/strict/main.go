// Command strict is a test plugin written with pluginsdk.Func: its one
// function "run" takes a "mode" that must be "safe" and refuses unknown
// parameters, so the host can prove that exact names hold end to end.
package main

import (
	"context"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// In is run's input.
type In struct {
	Mode string `json:"mode" jsonschema:"enum=safe,description=Only safe is allowed"`
}

// Out is run's result: the mode the function received.
type Out struct {
	Mode string `json:"mode"`
}

func main() {
	pluginsdk.Serve(pluginsdk.NewToolkit(opentool.Info{Title: "Strict", Version: "1"}).
		Add(pluginsdk.Func("run", "Runs in the given mode.", func(_ context.Context, in In) (Out, error) {
			return Out{Mode: in.Mode}, nil
		})))
}
