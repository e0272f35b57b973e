// Package schema holds the published JSON Schemas (draft 2020-12) of the
// declaration files a plugins folder may hold: NAME.tools.json,
// NAME.policy.json and NAME.mcp.json. They are embedded, so that
// `opentool-host validate` checks a file against the very schemas the
// docs link, and reports every fault they find at once
// (internal/decl's parsers stop at the first).
package schema

import (
	"bytes"
	"embed"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed *.schema.json
var files embed.FS

// Fault is one fault of a declaration file.
type Fault struct {
	// Path is the JSON path of the faulty value ("$.functions[0].name").
	Path string
	// Message says what is wrong.
	Message string
}

// String is "PATH: MESSAGE".
func (f Fault) String() string { return f.Path + ": " + f.Message }

var (
	compileOnce sync.Once
	compiled    map[string]*jsonschema.Schema
	compileErr  error
)

// Check validates data against the schema of kind ("tools", "policy" or
// "mcp") and returns every fault the schema finds, sorted by path; nil
// when data is valid. Errors: data is not JSON, or kind is unknown.
func Check(kind string, data []byte) ([]Fault, error) {
	compileOnce.Do(compile)
	if compileErr != nil {
		return nil, compileErr
	}
	sch := compiled[kind]
	if sch == nil {
		return nil, fmt.Errorf("schema: no schema for %q", kind)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	err = sch.Validate(v)
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return nil, err
	}
	var out []Fault
	seen := map[string]bool{}
	for _, u := range ve.BasicOutput().Errors {
		if u.Error == nil {
			continue
		}
		for _, f := range faultsOf(jsonPath(u.InstanceLocation), u.Error.String()) {
			if strings.HasPrefix(f.Message, "validation failed") || seen[f.String()] {
				continue // the summary lines of the output, and repeats
			}
			seen[f.String()] = true
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// additional is the validator's message for members a schema does not
// allow: "additional properties 'a', 'b' not allowed".
var additional = regexp.MustCompile(`^additional properties (.+) not allowed$`)

// faultsOf is the fault at path with message, said as internal/decl's
// parsers say it: a member the schema does not allow is
// "PATH.NAME: unknown member", one fault per member.
func faultsOf(path, msg string) []Fault {
	m := additional.FindStringSubmatch(msg)
	if m == nil {
		return []Fault{{Path: path, Message: msg}}
	}
	var out []Fault
	for _, name := range strings.Split(m[1], ", ") {
		out = append(out, Fault{Path: path + "." + strings.Trim(name, "'"), Message: "unknown member"})
	}
	return out
}

// compile compiles the embedded schemas, each under its file's name.
func compile() {
	compiled = map[string]*jsonschema.Schema{}
	c := jsonschema.NewCompiler()
	for _, kind := range []string{"tools", "policy", "mcp"} {
		name := kind + ".schema.json"
		b, err := files.ReadFile(name)
		if err != nil {
			compileErr = err
			return
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			compileErr = fmt.Errorf("%s: %w", name, err)
			return
		}
		if err := c.AddResource(name, doc); err != nil {
			compileErr = err
			return
		}
		if compiled[kind], err = c.Compile(name); err != nil {
			compileErr = err
			return
		}
	}
}

// jsonPath turns a JSON pointer ("/functions/0/name") into a JSON path
// ("$.functions[0].name").
func jsonPath(ptr string) string {
	var b strings.Builder
	b.WriteString("$")
	if ptr == "" {
		return "$"
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if _, err := strconv.Atoi(tok); err == nil {
			b.WriteString("[" + tok + "]")
		} else {
			b.WriteString("." + tok)
		}
	}
	return b.String()
}
