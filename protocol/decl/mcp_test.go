package decl

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseMCPDesktopConfig(t *testing.T) {
	// The shape Claude Desktop, Cursor and VS Code write, with the members
	// they add that mean nothing here.
	got, err := ParseMCP([]byte(`{"mcpServers":{
		"fs":{"command":"npx","args":["-y","@modelcontextprotocol/server-filesystem","/tmp"],"env":{"DEBUG":"1"},"autoApprove":["read"],"timeout":60},
		"remote":{"type":"http","url":"https://example.com/mcp","headers":{"Authorization":"Bearer x"}},
		"off":{"command":"x","disabled":true},
		"local":{"type":"stdio","command":"./bin/srv","cwd":"sub"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]MCPServer{
		"fs":     {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/tmp"}, Env: map[string]string{"DEBUG": "1"}},
		"remote": {URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer x"}},
		"local":  {Command: "./bin/srv", Cwd: "sub"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestParseMCPFaultsHaveJSONPaths(t *testing.T) {
	// ParseMCP (validate, OCI artifacts) reports the first fault of the
	// file or of any entry; the host fails only that entry (desktop_test.go).
	for _, tc := range []struct{ in, want string }{
		{`[]`, "$: must be a JSON object"},
		{`{"other":{}}`, `$: has no server list`},
		{`{"mcpServers":[]}`, "$.mcpServers: must be an object"},
		{`{"mcpServers":{"a":{"command":"x","args":["ok",2]}}}`, "$.mcpServers.a.args[1]: must be a string"},
		{`{"mcpServers":{"a":{"command":"x","env":{"K":null}}}}`, "$.mcpServers.a.env.K: must be a string"},
		{`{"mcpServers":{"a":{"command":""}}}`, "$.mcpServers.a.command: must be a non-empty string"},
		{`{"mcpServers":{"a":{}}}`, `$.mcpServers.a: needs "command"`},
		{`{"mcpServers":{"a":{"command":"x","url":"http://h/"}}}`, `$.mcpServers.a: has both`},
		{`{"mcpServers":{"a":{"url":"ftp://h/"}}}`, "$.mcpServers.a.url: must be an absolute http or https URL"},
		{`{"mcpServers":{"a":{"command":"x","type":"sse"}}}`, `$.mcpServers.a.type: is "sse", but the entry has a "command"`},
		{`{"mcpServers":{"a":{"command":"x","type":"ws"}}}`, `$.mcpServers.a.type: must be "stdio"`},
		{`{"mcpServers":{"a":{"command":"x","disabled":"yes"}}}`, "$.mcpServers.a.disabled: must be true or false"},
		{`{"mcpServers":{"a":{"command":"x"},"a":{"command":"y"}}}`, `$.mcpServers.a: duplicate member`},
		{`{"mcpServers":{"a":{"command":"x","env":{"A=B":"c"}}}}`, `$.mcpServers.a.env["A=B"]: is not a variable name`},
		{`{"mcpServers":{"a":{"command":"x","args":["${input:k}"]}}}`, `$.mcpServers.a.args[0]: ${input:k} is a VS Code input`},
		{`{"mcpServers":`, "$: "},
	} {
		_, err := ParseMCP([]byte(tc.in))
		if err == nil || !strings.Contains(faultText(err), tc.want) {
			t.Errorf("ParseMCP(%s) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestParseMCPRefusesHugeFiles(t *testing.T) {
	big := make([]byte, MaxFileBytes+1)
	if _, err := ParseMCP(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("err = %v", err)
	}
}

func TestLaunchRoundTrip(t *testing.T) {
	l := Launch{Name: "n", Dir: "/p", Server: MCPServer{Command: "c", Args: []string{"a"}, Env: map[string]string{"K": "v"}}}
	got, err := DecodeLaunch(l.Encode())
	if err != nil || !reflect.DeepEqual(got, l) {
		t.Fatalf("DecodeLaunch = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "{}", `{"name":"n","server":{}}`} {
		if _, err := DecodeLaunch(bad); err == nil {
			t.Errorf("DecodeLaunch(%q) accepted", bad)
		}
	}
}
