package cmdtool

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/opentool-host/opentool-host/internal/decl"
)

// placeholderRE matches "{{" and "}}" (literal braces) or "{name}".
var placeholderRE = regexp.MustCompile(`\{\{|\}\}|\{([a-zA-Z0-9_.-]+)\}`)

// wholeRE matches an element that is exactly one placeholder.
var wholeRE = regexp.MustCompile(`^\{([a-zA-Z0-9_.-]+)\}$`)

// buildArgv expands the command template with the call's values (the
// rules are on decl.Command.Argv). Each value becomes part of exactly one
// argument (or, for an array in a whole element, one argument per item):
// nothing is ever split, quoted or given to a shell.
func buildArgv(tmpl []decl.Arg, values map[string]any) ([]string, error) {
	argv := make([]string, 0, len(tmpl))
	for _, a := range tmpl {
		if a.Flag != "" {
			if b, _ := values[a.When].(bool); b {
				argv = append(argv, a.Flag)
			}
			continue
		}
		if m := wholeRE.FindStringSubmatch(a.Template); m != nil {
			if items, ok := values[m[1]].([]any); ok {
				for _, it := range items {
					argv = append(argv, text(it))
				}
				continue
			}
		}
		arg, present := expand(a.Template, values)
		if present {
			argv = append(argv, arg)
		}
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("empty command line")
	}
	return argv, nil
}

// expand replaces the placeholders of one element; present is false when
// one of them names an absent parameter (the element is left out).
func expand(tmpl string, values map[string]any) (string, bool) {
	present := true
	out := placeholderRE.ReplaceAllStringFunc(tmpl, func(m string) string {
		if m == "{{" || m == "}}" {
			return m[:1]
		}
		v, ok := values[strings.Trim(m, "{}")]
		if !ok || v == nil {
			present = false
			return ""
		}
		return text(v)
	})
	return out, present
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
