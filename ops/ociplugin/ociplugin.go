// Package ociplugin ships one plugin (its executable and its declaration
// and policy files) as an OCI artifact, with oras-go: Push packs and
// uploads it, Fetch downloads and verifies it into a staging folder
// inside a plugins directory, and Pulled.Install moves it into place
// atomically, so that a running host hot-loads it. docs/oci-plugins.md
// describes the format and the commands (opentool-host push and pull).
//
// The artifact is an OCI image manifest, version 1.1:
//
//	artifactType  application/vnd.opentool-host.plugin.v1
//	config        the empty descriptor (application/vnd.oci.empty.v1+json)
//	layers        one per file, at most one of each kind (MaxLayers):
//	  application/vnd.opentool-host.plugin.policy.v1+json  NAME.policy.json
//	  application/vnd.opentool-host.plugin.mcp.v1+json     NAME.mcp.json
//	  application/vnd.opentool-host.plugin.tools.v1+json   NAME.tools.json
//	  application/vnd.opentool-host.plugin.binary.v1       opentool-plugin-NAME
//	each layer: org.opencontainers.image.title = the file's base name;
//	the binary's also AnnotationMode and AnnotationPlatform
//	annotations   AnnotationName = NAME, AnnotationPlatform = "linux/amd64"
//	              (with a binary), org.opencontainers.image.created
//
// Everything a pull writes is checked first: the artifact type, each
// layer's media type, its title (exactly the kind's file name for NAME:
// never a path), its size (Options.MaxLayerBytes; declarations and
// policies at most decl.MaxFileBytes), its digest (sha256, verified while
// reading), the declarations' and policy's content (parsed as the host
// parses them) and the binary's platform (annotated, and read again from
// the downloaded header). A refused artifact writes nothing.
package ociplugin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/opentool-host/opentool-host/protocol/decl"
)

// Media types of the artifact and of its layers.
const (
	// ArtifactType is the manifest's artifactType.
	ArtifactType = "application/vnd.opentool-host.plugin.v1"
	// MediaTypeBinary is the layer of the plugin executable
	// (opentool-plugin-NAME).
	MediaTypeBinary = "application/vnd.opentool-host.plugin.binary.v1"
	// MediaTypeTools is the layer of NAME.tools.json.
	MediaTypeTools = "application/vnd.opentool-host.plugin.tools.v1+json"
	// MediaTypeMCP is the layer of NAME.mcp.json.
	MediaTypeMCP = "application/vnd.opentool-host.plugin.mcp.v1+json"
	// MediaTypePolicy is the layer of NAME.policy.json.
	MediaTypePolicy = "application/vnd.opentool-host.plugin.policy.v1+json"
)

// Annotations of the manifest and of the binary's layer (reverse-domain
// keys of the project's home, github.com/opentool-host).
const (
	// AnnotationName (manifest) is the plugin's NAME.
	AnnotationName = "com.github.opentool-host.plugin.name"
	// AnnotationPlatform (manifest and binary layer) is the platform the
	// binary is built for, "GOOS/GOARCH", or PlatformAny for a script.
	AnnotationPlatform = "com.github.opentool-host.plugin.platform"
	// AnnotationMode (binary layer) is the binary's permission bits when
	// pushed, in octal ("0755"). Pull writes binaries 0755 and other
	// files 0644 whatever it says.
	AnnotationMode = "com.github.opentool-host.file.mode"
)

// DefaultMaxLayerBytes is Options.MaxLayerBytes's default: 256 MiB.
const DefaultMaxLayerBytes int64 = 256 << 20

// MaxLayers is the most layers an artifact has: one of each Kind.
const MaxLayers = 4

// maxManifestBytes caps the manifest a pull reads.
const maxManifestBytes = 1 << 20

// ErrRefused is wrapped by every error about an artifact that is not a
// well-formed plugin artifact for this machine: wrong artifact or media
// type, hostile or unexpected file names, too many or too large layers,
// content that does not match its digest, invalid declarations, a binary
// for another platform. Nothing is written when it is returned.
var ErrRefused = errors.New("refused")

// refused returns an error wrapping ErrRefused (and any %w of format).
func refused(format string, a ...any) error {
	return fmt.Errorf("%w: %w", ErrRefused, fmt.Errorf(format, a...))
}

// Kind is what a file of a plugin is.
type Kind string

// The kinds of file, one layer each.
const (
	// KindBinary is the executable opentool-plugin-NAME.
	KindBinary Kind = "binary"
	// KindTools is NAME.tools.json (command-line tools).
	KindTools Kind = "tools"
	// KindMCP is NAME.mcp.json (MCP servers).
	KindMCP Kind = "mcp"
	// KindPolicy is NAME.policy.json (limits and sandbox grants).
	KindPolicy Kind = "policy"
)

// kindInfo is how a kind is named, typed and checked.
type kindInfo struct {
	kind      Kind
	mediaType string
	file      func(name string) string // the file's base name for plugin name
	check     func([]byte) error       // parses a JSON file as the host does; nil for the binary
}

// kinds in install order: the policy before what it governs, the
// declarations, the binary last (see Pulled.Install).
var kinds = []kindInfo{
	{KindPolicy, MediaTypePolicy, func(n string) string { return n + decl.PolicySuffix }, func(b []byte) error { _, err := decl.ParsePolicy(b); return err }},
	{KindMCP, MediaTypeMCP, func(n string) string { return n + decl.MCPSuffix }, func(b []byte) error { _, err := decl.ParseMCP(b); return err }},
	{KindTools, MediaTypeTools, func(n string) string { return n + decl.ToolsSuffix }, func(b []byte) error { _, err := decl.ParseCommands(b); return err }},
	{KindBinary, MediaTypeBinary, func(n string) string { return decl.PluginPrefix + n }, nil},
}

// kindOf returns the info of kind k.
func kindOf(k Kind) kindInfo {
	for _, ki := range kinds {
		if ki.kind == k {
			return ki
		}
	}
	panic("ociplugin: unknown kind " + string(k))
}

// validName reports whether name is a plugin name (decl.PluginName's rule).
func validName(name string) bool {
	_, ok := decl.PluginName(decl.PluginPrefix + name)
	return ok
}

// classify returns the plugin name and kind of file base name base.
func classify(base string) (string, kindInfo, bool) {
	for _, ki := range kinds {
		affix := ki.file("") // the binary's prefix, a declaration's suffix
		name := strings.TrimSuffix(base, affix)
		if ki.kind == KindBinary {
			name = strings.TrimPrefix(base, affix)
		}
		if name != base && validName(name) && ki.file(name) == base {
			return name, ki, true
		}
	}
	return "", kindInfo{}, false
}

// File is one file of a plugin artifact.
type File struct {
	// Kind is what the file is.
	Kind Kind
	// Name is its base name in a plugins directory
	// ("opentool-plugin-calculator", "calculator.policy.json").
	Name string
	// Path is where it is: the file pushed, or the file pulled (in the
	// plugins directory once installed).
	Path string
	// Size is its size in bytes (set by Push and Fetch).
	Size int64
	// SHA256 is the hex sha256 of its bytes, its layer's digest (set by
	// Push and Fetch).
	SHA256 string
}

// Plugin is the files of one plugin, in install order (policy,
// declarations, binary).
type Plugin struct {
	// Name is the plugin's NAME.
	Name string
	// Platform is the binary's platform ("linux/amd64", PlatformAny);
	// "" when there is no binary (set by Push and Fetch).
	Platform string
	// Files are the plugin's files, at most one of each kind.
	Files []File
}

// FromDir returns the files of plugin name in dir: those of
// opentool-plugin-NAME, NAME.mcp.json, NAME.tools.json and
// NAME.policy.json that exist. Errors: name is not a plugin name, or the
// files break a rule of FromPaths.
func FromDir(dir, name string) (*Plugin, error) {
	if !validName(name) {
		return nil, fmt.Errorf("%q is not a plugin name (want [a-zA-Z0-9_-]{1,64}, without \"__\")", name)
	}
	var paths []string
	for _, ki := range kinds {
		path := filepath.Join(dir, ki.file(name))
		if _, err := os.Stat(path); err == nil {
			paths = append(paths, path)
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%s: no file of plugin %s (%s%s, %s.mcp.json, %s.tools.json)", dir, name, decl.PluginPrefix, name, name, name)
	}
	return FromPaths(paths)
}

// FromPaths returns the plugin made of the files at paths. Errors: a
// file's base name is not opentool-plugin-NAME, NAME.mcp.json,
// NAME.tools.json or NAME.policy.json; the files name more than one
// plugin or hold a kind twice; or the rules of check.
func FromPaths(paths []string) (*Plugin, error) {
	p := &Plugin{}
	for _, path := range paths {
		base := filepath.Base(path)
		name, ki, ok := classify(base)
		if !ok {
			return nil, fmt.Errorf("%s: not a plugin file (want %sNAME, NAME.mcp.json, NAME.tools.json or NAME.policy.json)", path, decl.PluginPrefix)
		}
		if p.Name != "" && name != p.Name {
			return nil, fmt.Errorf("%s is of plugin %s, %s of plugin %s: one artifact holds one plugin", base, name, p.Files[0].Name, p.Name)
		}
		p.Name = name
		p.Files = append(p.Files, File{Kind: ki.kind, Name: base, Path: path})
	}
	p.sort()
	if err := p.check(); err != nil {
		return nil, err
	}
	return p, nil
}

// sort puts p.Files in install order.
func (p *Plugin) sort() {
	var out []File
	for _, ki := range kinds {
		for _, f := range p.Files {
			if f.Kind == ki.kind {
				out = append(out, f)
			}
		}
	}
	p.Files = out
}

// File returns p's file of kind k, nil when none.
func (p *Plugin) File(k Kind) *File {
	for i := range p.Files {
		if p.Files[i].Kind == k {
			return &p.Files[i]
		}
	}
	return nil
}

// check enforces the rules every artifact keeps: each kind at most once;
// something to run (a binary, NAME.mcp.json or NAME.tools.json); not
// both a binary and NAME.tools.json (both would be plugin NAME).
func (p *Plugin) check() error {
	seen := map[Kind]bool{}
	for _, f := range p.Files {
		if seen[f.Kind] {
			return fmt.Errorf("two files of kind %s (%s)", f.Kind, f.Name)
		}
		seen[f.Kind] = true
	}
	switch {
	case !seen[KindBinary] && !seen[KindMCP] && !seen[KindTools]:
		return fmt.Errorf("plugin %s: nothing to run (want %s%s, %s.mcp.json or %s.tools.json)", p.Name, decl.PluginPrefix, p.Name, p.Name, p.Name)
	case seen[KindBinary] && seen[KindTools]:
		return fmt.Errorf("plugin %s: %s%s and %s.tools.json would both be plugin %s", p.Name, decl.PluginPrefix, p.Name, p.Name, p.Name)
	}
	return nil
}
