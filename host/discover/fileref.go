package discover

import "github.com/opentool-host/opentool-host/protocol/decl"

// FileRef names one version of a plugin file: an executable, or one
// server of a declaration.
type FileRef struct {
	Path  string    // the plugin file (an executable or a declaration)
	Stamp FileStamp // the file's stamp as found
	// Sum is the file's sha256 when the caller knew it had to be read
	// (its stamp differs from the serving file's), or the sha256 of
	// launch for a declared server; "" for unknown.
	Sum string
	// Launch is the decl.Launch JSON of a declared server ("" for an
	// executable); fault is why its declaration could not be read.
	Launch, Fault string
	// Policy is the plugin's policy file as found; a change restarts
	// the plugin.
	Policy PolicyRef
	// FileSum is a declared plugin's declaration file sha256 (pins.go).
	FileSum string
}

// Remote reports whether f declares an MCP server reached by URL
// (decl.MCPServer.URL): no process of the host's runs it, so its session
// ending is the network's or the server's doing, never a crash loop of
// a program (the supervisor retries it for as long as it is declared).
func (f FileRef) Remote() bool {
	if f.Launch == "" {
		return false
	}
	l, err := decl.DecodeLaunch(f.Launch)
	return err == nil && l.Server.URL != ""
}

// SamePolicy reports whether f and g have the same policy file content.
func (f FileRef) SamePolicy(g FileRef) bool {
	return f.Policy.Sum == g.Policy.Sum && f.Policy.Fault == g.Policy.Fault
}

// Same reports whether f and g are the same path with the same stamp
// (and, for a declared server, the same declaration).
func (f FileRef) Same(g FileRef) bool {
	return f.Path == g.Path && f.Stamp.Equal(g.Stamp) && f.Launch == g.Launch && f.Fault == g.Fault && f.SamePolicy(g)
}

// ShortSum is the first 12 hex digits of a sha256, for logs.
func ShortSum(sum string) string { return sum[:min(12, len(sum))] }
