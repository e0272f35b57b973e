// Package validate checks the files `opentool-host validate` is given,
// each as what its name says it is: an OpenTool document, a plugins
// folder's declaration or policy file, a desktop MCP client's config, or
// a lock file. It reports every fault it finds as one line.
package validate

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/opentool-host/opentool-host/docs/schema"
	"github.com/opentool-host/opentool-host/internal/strictjson"
	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/protocol/lockfile"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// File checks the file at path and returns its faults, each without the
// file's name ("PATH: MESSAGE" where the fault has a JSON path;
// "LINE:COLUMN: PATH: MESSAGE" and the line with a caret below, where
// its place in the file is known; Line puts the name in front); nil when
// it has none. By its content and name, the file is:
//
//   - an executable (an ELF, Mach-O or PE header, or a "#!" line): one
//     fault saying that validate reads documents, and how a plugin
//     prints its own;
//   - NAME.mcp.json, or a desktop client's config by its usual name
//     (claude_desktop_config.json, mcp.json, .mcp.json, mcp_config.json):
//     the file's fault, or each server entry's (disabled entries aside).
//     Variables are checked for their syntax only: what they may read
//     depends on where the file is used (a drop-in or --mcp-config);
//   - NAME.tools.json (command tools) or NAME.policy.json: the parser's
//     fault, then every other fault the published schema finds
//     (docs/schema);
//   - opentool.lock: the lock file's faults (lockfile.Parse);
//   - anything else: an OpenTool document's faults (opentool.ValidateJSON).
//
// A drop-in (NAME.mcp.json, NAME.tools.json, NAME.policy.json,
// opentool.lock) is read as the host reads it, within its folder: a
// symbolic link leaving the folder is its one fault. A file that cannot
// be read (or is larger than 64 MiB) has that error as its one fault; a
// fault never quotes a byte of a file that is not JSON.
func File(path string) []string {
	read := decl.ReadFile
	if dropIn(path) {
		read = decl.ReadDropIn // read as the host reads it: no link out of its folder
	}
	data, err := read(path, 64<<20)
	switch {
	case err != nil:
	case isExecutable(data):
		err = fmt.Errorf("an executable, not a document: validate reads OpenTool documents and declaration files; a plugin prints its document with --document (%s --document > doc.json, then validate doc.json)", path)
	case isMCPConfig(path):
		return mcpFaults(path, data)
	case strings.HasSuffix(path, decl.ToolsSuffix):
		return declFaults("tools", data, func(b []byte) error {
			cmds, err := decl.ParseCommands(b)
			if err != nil {
				return err
			}
			return programFault(decl.Launch{Dir: folder(path), Commands: cmds})
		})
	case strings.HasSuffix(path, decl.PolicySuffix):
		return declFaults("policy", data, func(b []byte) error { _, err := decl.ParsePolicy(b); return err })
	case filepath.Base(path) == lockfile.Name:
		_, err = lockfile.Parse(data)
	default:
		err = opentool.ValidateJSON(data)
	}
	var ve *opentool.ValidationError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ve):
		out := make([]string, 0, len(ve.Faults))
		for _, f := range ve.Faults {
			out = append(out, f.String())
		}
		return out
	}
	return []string{err.Error()}
}

// Line returns fault, one of File's for file, as validate prints it:
// "FILE:LINE:COLUMN: ..." for a fault that starts with its line, else
// "FILE: FAULT".
func Line(file, fault string) string {
	if fault != "" && fault[0] >= '0' && fault[0] <= '9' {
		return file + ":" + fault
	}
	return file + ": " + fault
}

// dropIn reports whether file is read as a plugins folder's drop-in
// (NAME.mcp.json, NAME.tools.json, NAME.policy.json, opentool.lock),
// which validate reads as the host does: a symbolic link leaving its
// folder is refused (decl.ReadDropIn) rather than its target checked,
// whose faults could quote it.
func dropIn(file string) bool {
	for _, suffix := range []string{decl.MCPSuffix, decl.ToolsSuffix, decl.PolicySuffix} {
		if strings.HasSuffix(file, suffix) {
			return true
		}
	}
	return filepath.Base(file) == lockfile.Name
}

// isMCPConfig reports whether file is read as MCP servers: NAME.mcp.json,
// or a desktop client's config by its usual name.
func isMCPConfig(file string) bool {
	switch filepath.Base(file) {
	case "claude_desktop_config.json", "mcp.json", ".mcp.json", "mcp_config.json":
		return true
	}
	return strings.HasSuffix(file, decl.MCPSuffix)
}

// mcpFaults are the faults of an MCP server declaration: the file's, or
// each entry's (disabled entries aside).
func mcpFaults(path string, data []byte) []string {
	cfg, err := decl.ParseDesktop(data)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, e := range cfg.Entries {
		switch {
		case e.Disabled:
		case e.Fault != nil:
			out = append(out, e.Fault.Error())
		case strings.Contains(e.Server.Command, "${") || strings.Contains(e.Server.Env["PATH"], "${"):
			// Where it points depends on where the file is used.
		default:
			if err := programFault(decl.Launch{Dir: folder(path), Server: e.Server}); err != nil {
				out = append(out, e.Path+".command: "+err.Error())
			}
		}
	}
	return out
}

// programFault is the fault of a declared program that cannot run,
// looked up as the host's plugins look it up: in validate's own PATH
// (a plugin gets the host's), unless a server declares its own; its
// message names the folders searched (decl.ProgramError.Detail). nil
// when every program can run.
func programFault(l decl.Launch) error {
	var pe *decl.ProgramError
	if err := l.CheckPrograms(os.Getenv("PATH")); errors.As(err, &pe) {
		return errors.New(pe.Detail())
	}
	return nil
}

// folder is the absolute folder of file path, where a declaration's
// relative programs resolve.
func folder(path string) string {
	dir, _ := filepath.Abs(filepath.Dir(path))
	return dir
}

// declFaults are the faults of a declaration of kind (a schema of
// docs/schema): parse's fault (in the house style), then every other
// fault the published schema finds (one at the parser's path aside).
func declFaults(kind string, data []byte, parse func([]byte) error) []string {
	var out []string
	first := ""
	if err := parse(data); err != nil {
		out = append(out, err.Error())
		var df *decl.Fault
		if errors.As(err, &df) {
			first = df.Path
		}
	}
	if h, err := strictjson.ReadHandWritten(data, decl.MaxFileBytes); err == nil {
		data = h.JSON() // the schema reads standard JSON
	}
	faults, _ := schema.Check(kind, data)
	for _, f := range faults {
		if f.Path != first {
			out = append(out, f.String())
		}
	}
	return out
}

// isExecutable reports whether data starts like a program: an ELF,
// Mach-O or PE header, or a "#!" line.
func isExecutable(data []byte) bool {
	for _, magic := range [][]byte{{0x7f, 'E', 'L', 'F'}, {0xcf, 0xfa, 0xed, 0xfe}, {0xfe, 0xed, 0xfa, 0xcf}, []byte("MZ"), []byte("#!")} {
		if bytes.HasPrefix(data, magic) {
			return true
		}
	}
	return false
}
