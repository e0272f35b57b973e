// Command echo is the benchmark plugin: "echo" returns {"echo": ARGS} with
// ARGS the raw arguments, through pluginsdk.JSONCaller (no map decoding),
// so it measures the host and the wire, not the tool.
//
// It is also the scale and soak plugin, with a function name of its own so
// that many copies can be served side by side: the name is read from a
// trailer appended to its own executable (see harness.WriteNamedPlugin);
// with trailer name=p07 it serves one function "echo_p07" instead.
package main

import (
	"bytes"
	"context"
	"io"
	"os"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// trailerMark starts the trailer harness.WriteNamedPlugin appends:
// "\n#opentool-bench name=NAME gen=N\n".
const trailerMark = "\n#opentool-bench name="

type echo struct{ fn string }

var (
	_ pluginsdk.Tool       = echo{}
	_ pluginsdk.JSONCaller = echo{}
)

// Load implements pluginsdk.Tool: it returns the plugin's document.
func (e echo) Load(context.Context) (*opentool.OpenTool, error) {
	return &opentool.OpenTool{
		OpenTool: "1.1.0",
		Info:     opentool.Info{Title: "Echo", Version: "1.0.0"},
		Functions: []opentool.Function{{
			Name:        e.fn,
			Description: "Returns its arguments as {\"echo\": ARGS}.",
			Parameters:  []opentool.Parameter{{Name: "data", Schema: &opentool.Schema{Type: opentool.TypeString}}},
		}},
	}, nil
}

// Call implements pluginsdk.Tool.
func (e echo) Call(_ context.Context, _ string, args map[string]any) (map[string]any, error) {
	return map[string]any{"echo": args}, nil
}

// CallJSON implements pluginsdk.JSONCaller.
func (e echo) CallJSON(_ context.Context, name string, args []byte) ([]byte, error) {
	if name != e.fn {
		return nil, pluginsdk.FunctionNotFound(name)
	}
	if len(args) == 0 {
		args = []byte("{}")
	}
	out := make([]byte, 0, len(args)+10)
	out = append(out, `{"echo":`...)
	out = append(out, args...)
	return append(out, '}'), nil
}

// ownName returns the name in the executable's trailer, or "".
func ownName() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	f, err := os.Open(exe)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() < 256 {
		return ""
	}
	tail := make([]byte, 256)
	if _, err := f.ReadAt(tail, fi.Size()-256); err != nil && err != io.EOF {
		return ""
	}
	i := bytes.LastIndex(tail, []byte(trailerMark))
	if i < 0 {
		return ""
	}
	rest := tail[i+len(trailerMark):]
	if j := bytes.IndexAny(rest, " \n"); j >= 0 {
		rest = rest[:j]
	}
	return string(rest)
}

func main() {
	fn := "echo"
	if n := ownName(); n != "" {
		fn = "echo_" + n
	}
	pluginsdk.Serve(echo{fn: fn})
}
