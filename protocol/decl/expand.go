package decl

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Variables in the strings of a desktop config (command, args, env
// values, envFile, cwd, url, headers values), as the clients write them:
//
//	${env:VAR}           VS Code, Cursor: the host's variable VAR
//	${VAR}               Claude Code: the same
//	${VAR:-default}      Claude Code: VAR, or default when VAR is unset or empty
//	${userHome}          VS Code, Cursor: the host's $HOME
//	${workspaceFolder}   VS Code, Cursor: the folder of the file, or its parent
//	                     when the file is in .vscode or .cursor
//	${workspaceFolderBasename}  that folder's base name
//	${pathSeparator}, ${/}      "/"
//	${input:ID}          VS Code: a value VS Code prompts for; the host
//	                     cannot prompt, so the entry fails
//
// The first four read the host's environment and are for files the
// operator names (--mcp-config, Origin.Operator) only: in a drop-in file
// of the plugins folder they fail the entry. An unset VAR fails the entry
// too (write ${VAR:-} for an empty default). "${" without a closing "}"
// and "$VAR" without braces are kept as they are.

// varNameRE is what VAR of ${VAR} and ${env:VAR} may be.
var varNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// variable is one parsed reference: VAR, or a predefined name
// (predefined true), and the default of ${VAR:-default} (hasDef when
// given).
type variable struct {
	text       string // as written between "${" and "}"
	name       string
	predefined bool
	def        string
	hasDef     bool
}

// predefined are the VS Code variables the host knows besides VAR.
var predefined = map[string]bool{
	"userHome": true, "workspaceFolder": true, "workspaceFolderBasename": true, "pathSeparator": true, "/": true,
}

// parseVariable parses the text between "${" and "}". Errors: an input
// variable, or a form the host does not know.
func parseVariable(ref string) (variable, error) {
	if predefined[ref] {
		return variable{name: ref, predefined: true}, nil
	}
	if v, ok := strings.CutPrefix(ref, "env:"); ok && varNameRE.MatchString(v) {
		return variable{name: v}, nil
	}
	if id, ok := strings.CutPrefix(ref, "input:"); ok {
		return variable{}, fmt.Errorf("${%s} is a VS Code input, which the host cannot prompt for: put the value in \"env\" or an \"envFile\" instead", "input:"+id)
	}
	if name, def, ok := strings.Cut(ref, ":-"); ok && varNameRE.MatchString(name) {
		return variable{name: name, def: def, hasDef: true}, nil
	}
	if varNameRE.MatchString(ref) {
		return variable{name: ref}, nil
	}
	return variable{}, fmt.Errorf("${%s} is not a variable the host knows (${env:VAR}, ${VAR}, ${VAR:-default}, ${userHome}, ${workspaceFolder}, ${workspaceFolderBasename}, ${pathSeparator})", ref)
}

// references calls f for each ${...} of s with its parsed variable, and
// returns s with each replaced by what f returns. Errors: the first of
// parseVariable or f.
func references(s string, f func(variable) (string, error)) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i+2:], '}')
		if j < 0 {
			break
		}
		v, err := parseVariable(s[i+2 : i+2+j])
		if err != nil {
			return "", err
		}
		v.text = s[i+2 : i+2+j]
		val, err := f(v)
		if err != nil {
			return "", err
		}
		b.WriteString(s[:i])
		b.WriteString(val)
		s = s[i+2+j+1:]
	}
	b.WriteString(s)
	return b.String(), nil
}

// checkReferences checks the variables of s without expanding them (what
// ParseDesktop can tell without knowing the file's origin).
func checkReferences(s string) error {
	_, err := references(s, func(variable) (string, error) { return "", nil })
	return err
}

// Origin says where a desktop config comes from, which decides what its
// entries may read (DesktopEntry.Resolve).
type Origin struct {
	// Dir is the absolute folder of the file: a relative envFile is read
	// from it, and ${workspaceFolder} is it (or its parent when it is a
	// .vscode or .cursor folder).
	Dir string
	// Operator is true for a file the operator names (--mcp-config): its
	// ${env:VAR}, ${VAR}, ${VAR:-default} and ${userHome} read the host's
	// environment (LookupEnv), and its envFile may be any file. False for
	// a drop-in NAME.mcp.json of the plugins folder, which is untrusted
	// and may only narrow what the operator allowed: those variables fail
	// its entry, and its envFile must be a file inside Dir.
	Operator bool
	// LookupEnv reads the host's environment (Operator files only).
	// Default os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// workspace is the folder ${workspaceFolder} names.
func (o Origin) workspace() string {
	switch filepath.Base(o.Dir) {
	case ".vscode", ".cursor":
		return filepath.Dir(o.Dir)
	}
	return o.Dir
}

// expand returns s with its variables expanded for o. Errors: a variable
// of the host's environment in a drop-in file, an unset variable without
// a default, or what parseVariable refuses.
func (o Origin) expand(s string) (string, error) {
	return references(s, func(v variable) (string, error) {
		switch {
		case v.predefined && v.name == "workspaceFolder":
			return o.workspace(), nil
		case v.predefined && v.name == "workspaceFolderBasename":
			return filepath.Base(o.workspace()), nil
		case v.predefined && v.name != "userHome": // pathSeparator, /
			return string(os.PathSeparator), nil
		}
		ref := "${" + v.text + "}"
		if !o.Operator {
			return "", fmt.Errorf("%s: a drop-in file of the plugins folder may not read the host's environment; "+
				"give the plugin the variable with --plugin-env or a secret of NAME.policy.json, or name the file with --mcp-config", ref)
		}
		lookup := o.LookupEnv
		if lookup == nil {
			lookup = os.LookupEnv
		}
		name := v.name
		if v.predefined { // userHome
			name = "HOME"
		}
		val, ok := lookup(name)
		switch {
		case v.hasDef && val == "":
			return v.def, nil
		case !ok:
			return "", fmt.Errorf("%s: %s is not set in the host's environment (write ${%s:-} for an empty default)", ref, name, v.name)
		}
		return val, nil
	})
}
