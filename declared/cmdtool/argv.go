package cmdtool

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/opentool-host/opentool-host/protocol/decl"
)

// buildArgv expands the command template with the call's values (the
// rules are on decl.Command.Argv). Each value becomes part of exactly one
// argument (or, for an array in a whole element, one argument per item):
// nothing is ever split, quoted or given to a shell.
func buildArgv(tmpl []decl.Arg, values map[string]any) ([]string, error) {
	argv := make([]string, 0, len(tmpl))
	lookup := func(name string) (string, bool) {
		v, ok := values[name]
		if !ok || v == nil {
			return "", false
		}
		return text(v), true
	}
	for _, a := range tmpl {
		if a.Flag != "" {
			if b, _ := values[a.When].(bool); b {
				argv = append(argv, a.Flag)
			}
			continue
		}
		if name, ok := a.Whole(); ok {
			if items, ok := values[name].([]any); ok {
				for _, it := range items {
					argv = append(argv, text(it))
				}
				continue
			}
		}
		if arg, present := a.Expand(lookup); present {
			argv = append(argv, arg)
		}
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("empty command line")
	}
	return argv, nil
}

// text is a value as one argument: a string as is, anything else as JSON
// text (numbers without exponent when whole).
func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
