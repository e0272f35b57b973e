package decl

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/opentool-host/opentool-host/internal/strictjson"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// ToolsSuffix is the file-name suffix of a command-tools declaration:
// "NAME.tools.json" declares plugin NAME.
const ToolsSuffix = ".tools.json"

// Defaults and bounds of a command function.
const (
	// DefaultTimeoutMS is a command's timeout when none is declared (30 s).
	DefaultTimeoutMS = 30_000
	// MaxTimeoutMS is the longest timeout a declaration may set (10 min).
	MaxTimeoutMS = 600_000
	// DefaultMaxOutputBytes caps stdout and stderr each (1 MiB) when no
	// max_output_bytes is declared.
	DefaultMaxOutputBytes = 1 << 20
	// MaxOutputBytes is the largest max_output_bytes (16 MiB).
	MaxOutputBytes = 16 << 20
)

// Commands is a NAME.tools.json declaration: command-line programs served
// as the functions of plugin NAME, run without a shell.
//
//	{"description": "Text tools",
//	 "functions": [{
//	   "name": "count_words", "description": "Counts the words of a text.",
//	   "parameters": [{"name": "text", "schema": {"type": "string"}, "required": true}],
//	   "command": ["wc", "-w"], "stdin": "text", "timeout_ms": 5000}]}
type Commands struct {
	// Description describes the plugin (its document's info).
	Description string `json:"description,omitempty"`
	// Version is the plugin's version (default "1.0.0").
	Version string `json:"version,omitempty"`
	// Functions are the commands served as functions.
	Functions []Command `json:"functions"`
}

// Command is one function run as a program.
type Command struct {
	// Name, Description and Parameters are the OpenTool function's
	// (spec 1.1.0 "Function Object"); parameters are validated by the
	// host before the command runs.
	Name        string               `json:"name"`
	Description string               `json:"description"`
	Parameters  []opentool.Parameter `json:"parameters,omitempty"`
	// Argv is the command line, one element per argument, never given to
	// a shell. Element 0 is the program (a literal: a bare name looked up
	// in PATH, or a path relative to the declaration's folder). In the
	// others, "{param}" is replaced by the parameter's value (a string
	// as is, a number or boolean as JSON text); an element that is
	// exactly "{param}" of an array becomes one argument per item; an
	// element naming an absent optional parameter is left out; "{{" and
	// "}}" are literal braces. An element {"flag": "-i", "when": "param"} is "-i"
	// when the boolean parameter is true. Put "--" before values that
	// could start with "-".
	Argv []Arg `json:"command"`
	// Stdin names a string parameter whose value is the command's stdin
	// (default: empty stdin).
	Stdin string `json:"stdin,omitempty"`
	// TimeoutMS bounds one run, in ms (default DefaultTimeoutMS, at most
	// MaxTimeoutMS); the command and its children are then killed.
	TimeoutMS int `json:"timeout_ms,omitempty"`
	// Cwd is the working directory, relative to the declaration's folder
	// (default that folder).
	Cwd string `json:"cwd,omitempty"`
	// Env names variables of the plugin's environment passed on, beside
	// PATH, HOME, LANG, LC_*, TZ and TMPDIR.
	Env []string `json:"env,omitempty"`
	// Output is how stdout becomes the result: "text" (default):
	// {"stdout": S, "stderr": S, "exit_code": 0}; "json": stdout parsed
	// as one JSON object.
	Output string `json:"output,omitempty"`
	// OKExitCodes are the exit statuses that are a result, not an error
	// (default [0]; e.g. [0, 1] for grep, whose 1 means "no match").
	OKExitCodes []int `json:"ok_exit_codes,omitempty"`
	// MaxOutputBytes caps stdout and stderr each, in bytes (default
	// DefaultMaxOutputBytes, at most MaxOutputBytes): a command that
	// writes more is killed and the call fails.
	MaxOutputBytes int64 `json:"max_output_bytes,omitempty"`
}

// Arg is one element of a command line: a template string, or a flag
// included when a boolean parameter is true.
type Arg struct {
	// Template is the element as written ("" for a flag).
	Template string
	// Flag is the argument added when parameter When is true.
	Flag string
	When string
}

// UnmarshalJSON implements json.Unmarshaler: a string, or
// {"flag": "...", "when": "..."}.
func (a *Arg) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &a.Template)
	}
	var f struct {
		Flag string `json:"flag"`
		When string `json:"when"`
	}
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.DisallowUnknownFields()
	if err := d.Decode(&f); err != nil || f.Flag == "" || f.When == "" {
		return errors.New(`must be a string or {"flag": "...", "when": "PARAMETER"}`)
	}
	a.Flag, a.When = f.Flag, f.When
	return nil
}

// MarshalJSON implements json.Marshaler (the inverse of UnmarshalJSON).
func (a Arg) MarshalJSON() ([]byte, error) {
	if a.Flag != "" {
		return json.Marshal(map[string]string{"flag": a.Flag, "when": a.When})
	}
	return json.Marshal(a.Template)
}

// placeholderRE finds "{name}" in a template ("{{" and "}}" are
// literal braces); wholeRE an element that is exactly one placeholder.
var (
	placeholderRE = regexp.MustCompile(`\{\{|\}\}|\{([a-zA-Z0-9_.-]+)\}`)
	wholeRE       = regexp.MustCompile(`^\{([a-zA-Z0-9_.-]+)\}$`)
)

// Whole returns the parameter a template names when it is exactly
// "{param}" (an array parameter then gives one argument per item).
func (a Arg) Whole() (string, bool) {
	if m := wholeRE.FindStringSubmatch(a.Template); m != nil {
		return m[1], true
	}
	return "", false
}

// Expand returns the template with each "{name}" replaced by value(name)
// and "{{", "}}" by single braces; present is false when value reports a
// name absent (the element is then left out of the command line).
func (a Arg) Expand(value func(name string) (string, bool)) (arg string, present bool) {
	present = true
	arg = placeholderRE.ReplaceAllStringFunc(a.Template, func(m string) string {
		if m == "{{" || m == "}}" {
			return m[:1]
		}
		v, ok := value(m[1 : len(m)-1])
		present = present && ok
		return v
	})
	return arg, present
}

// Placeholders returns the parameter names a template refers to.
func (a Arg) Placeholders() []string {
	var out []string
	for _, m := range placeholderRE.FindAllStringSubmatch(a.Template, -1) {
		if m[1] != "" {
			out = append(out, m[1])
		}
	}
	return out
}

// ParseCommands decodes a NAME.tools.json declaration exactly, as
// hand-written JSON (strictjson.ReadHandWritten: comments and trailing
// commas allowed): syntax, duplicate and unknown members, types, and
// then the rules of Command. Errors: a *Fault with the JSON path of the
// first fault and its line and column
// ("3:7: $.functions[0].command[2]: unknown parameter \"x\"").
func ParseCommands(data []byte) (*Commands, error) {
	return strictjson.ParseHandWritten(data, MaxFileBytes, func(h *strictjson.HandWritten) (*Commands, error) {
		if err := snippetFault(h); err != nil {
			return nil, err
		}
		var c Commands
		if err := h.Decode(&c); err != nil {
			return nil, err
		}
		return &c, c.check("$")
	})
}

// wholeToolsFile is what a whole NAME.tools.json looks like, for the
// fault of a file that holds only function entries.
const wholeToolsFile = `a whole file is {"description": "...", "functions": [ENTRY, ...]}`

// snippetFault is the *Fault of a file h that holds function entries of a
// NAME.tools.json instead of a whole one: one entry (an object with
// "command" and no "functions") or a list of entries. nil otherwise.
func snippetFault(h *strictjson.HandWritten) error {
	v, err := h.Tree()
	if err != nil {
		return nil // Decode says what is wrong
	}
	switch v := v.(type) {
	case []any:
		if len(v) > 0 && isEntry(v[0]) {
			return &Fault{Path: "$", Message: "a list of function entries, not a whole NAME.tools.json: " + wholeToolsFile}
		}
	case map[string]any:
		if _, ok := v["functions"]; !ok && isEntry(v) {
			return &Fault{Path: "$", Message: "one function entry, not a whole NAME.tools.json: " + wholeToolsFile}
		}
	}
	return nil
}

// isEntry reports whether v looks like a function entry: an object with
// a "command".
func isEntry(v any) bool {
	m, ok := v.(map[string]any)
	_, cmd := m["command"]
	return ok && cmd
}

// Document returns the OpenTool 1.1.0 document of c for plugin name.
func (c *Commands) Document(name string) *opentool.OpenTool {
	v := c.Version
	if v == "" {
		v = "1.0.0"
	}
	doc := &opentool.OpenTool{OpenTool: "1.1.0", Info: opentool.Info{Title: name, Version: v, Description: c.Description}}
	no := false
	for _, f := range c.Functions {
		doc.Functions = append(doc.Functions, opentool.Function{Name: f.Name, Description: f.Description, Parameters: f.Parameters, AdditionalParameters: &no})
	}
	return doc
}

// check checks c; p is the path of c ("$").
func (c *Commands) check(p string) error {
	if len(c.Functions) == 0 {
		return &Fault{Path: p + ".functions", Message: "declare at least one function"}
	}
	raw, _ := json.Marshal(c.Document("check"))
	var ve *opentool.ValidationError
	if err := opentool.ValidateJSON(raw); errors.As(err, &ve) && len(ve.Faults) > 0 {
		return &Fault{Path: p + "." + strings.TrimPrefix(ve.Faults[0].Path, "$."), Message: ve.Faults[0].Message}
	} else if err != nil {
		return &Fault{Path: p, Message: err.Error()}
	}
	for i, f := range c.Functions {
		if err := f.check(fmt.Sprintf("%s.functions[%d]", p, i)); err != nil {
			return err
		}
	}
	return nil
}

// check checks the command part of f at path p.
func (f *Command) check(p string) error {
	params := map[string]*opentool.Parameter{}
	for i := range f.Parameters {
		params[f.Parameters[i].Name] = &f.Parameters[i]
	}
	if len(f.Argv) == 0 {
		return &Fault{Path: p + ".command", Message: "must name the program and its arguments"}
	}
	if f.Argv[0].Flag != "" || f.Argv[0].Template == "" || len(f.Argv[0].Placeholders()) > 0 || strings.Contains(f.Argv[0].Template, "{") {
		return &Fault{Path: p + ".command[0]", Message: "the program must be a literal string (a caller never chooses what runs)"}
	}
	for i, a := range f.Argv[1:] {
		ap := fmt.Sprintf("%s.command[%d]", p, i+1)
		if a.Flag != "" {
			if q := params[a.When]; q == nil || q.Schema == nil || q.Schema.Type != opentool.TypeBoolean {
				return &Fault{Path: ap + ".when", Message: fmt.Sprintf("%q is not a boolean parameter", a.When)}
			}
			continue
		}
		for _, name := range a.Placeholders() {
			if params[name] == nil {
				return &Fault{Path: ap, Message: fmt.Sprintf("unknown parameter %q", name)}
			}
		}
	}
	return f.checkOptions(p, params)
}

// checkOptions checks stdin, timeout, output and limits.
func (f *Command) checkOptions(p string, params map[string]*opentool.Parameter) error {
	switch {
	case f.Stdin != "" && (params[f.Stdin] == nil || params[f.Stdin].Schema == nil || params[f.Stdin].Schema.Type != opentool.TypeString):
		return &Fault{Path: p + ".stdin", Message: fmt.Sprintf("%q is not a string parameter", f.Stdin)}
	case f.TimeoutMS < 0 || f.TimeoutMS > MaxTimeoutMS:
		return &Fault{Path: p + ".timeout_ms", Message: fmt.Sprintf("must be between 1 and %d", MaxTimeoutMS)}
	case f.Output != "" && f.Output != "text" && f.Output != "json":
		return &Fault{Path: p + ".output", Message: `must be "text" or "json"`}
	case f.MaxOutputBytes < 0 || f.MaxOutputBytes > MaxOutputBytes:
		return &Fault{Path: p + ".max_output_bytes", Message: fmt.Sprintf("must be between 1 and %d", MaxOutputBytes)}
	}
	for i, e := range f.Env {
		if e == "" || strings.ContainsAny(e, "=\x00") || slices.Contains([]string{"OPENTOOL_API_KEYS"}, e) {
			return &Fault{Path: fmt.Sprintf("%s.env[%d]", p, i), Message: fmt.Sprintf("%q cannot be passed", e)}
		}
	}
	return nil
}
