package decl

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// entrySummary is what a test compares of an entry (its server only
// when it has no fault: a faulty entry's server is not meaningful).
type entrySummary struct {
	Name     string
	Server   MCPServer
	EnvFile  string
	Disabled bool
	Fault    string
}

func summarize(es []DesktopEntry) []entrySummary {
	out := make([]entrySummary, len(es))
	for i, e := range es {
		out[i] = entrySummary{Name: e.Name, Server: e.Server, EnvFile: e.EnvFile, Disabled: e.Disabled}
		if e.Fault != nil {
			out[i] = entrySummary{Name: e.Name, Disabled: e.Disabled, Fault: faultText(e.Fault)}
		}
	}
	return out
}

func TestParseDesktopClients(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name    string
		in      string
		want    []entrySummary
		ignored []string
	}{
		{
			name: "Claude Desktop: top-level settings, one bad entry, file order kept",
			in: `{"globalShortcut":"Ctrl+Space","mcpServers":{
				"zeta":{"command":"npx","args":["-y","srv"],"env":{"PORT":3000,"DEBUG":true}},
				"broken":{"command":"x","args":[1]},
				"alpha":{"command":"./a"}}}`,
			want: []entrySummary{
				{Name: "zeta", Server: MCPServer{Command: "npx", Args: []string{"-y", "srv"}, Env: map[string]string{"PORT": "3000", "DEBUG": "true"}}},
				{Name: "broken", Fault: "$.mcpServers.broken.args[0]: must be a string"},
				{Name: "alpha", Server: MCPServer{Command: "./a"}},
			},
			ignored: []string{"$.globalShortcut"},
		},
		{
			name: "Cline / Roo: clients' own settings, disabled, transportType",
			in: `{"mcpServers":{
				"a":{"command":"x","autoApprove":["t"],"alwaysAllow":[],"timeout":60,"disabledTools":["t2"],"description":"d"},
				"off":{"command":"y","disabled":true,"args":[2]},
				"on":{"command":"z","disabled":false},
				"legacy":{"transportType":"sse","url":"http://h/sse"}}}`,
			want: []entrySummary{
				{Name: "a", Server: MCPServer{Command: "x"}},
				{Name: "off", Disabled: true, Fault: "$.mcpServers.off.args[0]: must be a string"},
				{Name: "on", Server: MCPServer{Command: "z"}},
				{Name: "legacy", Server: MCPServer{URL: "http://h/sse", Transport: TransportSSE}},
			},
			ignored: []string{"$.mcpServers.a.alwaysAllow", "$.mcpServers.a.autoApprove", "$.mcpServers.a.description", "$.mcpServers.a.disabledTools", "$.mcpServers.a.timeout"},
		},
		{
			name: "Claude Code .mcp.json: type sse and http, variables kept for Resolve",
			in: `{"mcpServers":{
				"sse":{"type":"sse","url":"${API_BASE:-https://h}/sse","headers":{"X-Key":"${KEY}"}},
				"http":{"type":"http","url":"https://h/mcp"},
				"local":{"type":"stdio","command":"${HOME}/bin/srv","env":{"T":"${env:T}"}}}}`,
			want: []entrySummary{
				{Name: "sse", Server: MCPServer{URL: "${API_BASE:-https://h}/sse", Headers: map[string]string{"X-Key": "${KEY}"}, Transport: TransportSSE}},
				{Name: "http", Server: MCPServer{URL: "https://h/mcp"}},
				{Name: "local", Server: MCPServer{Command: "${HOME}/bin/srv", Env: map[string]string{"T": "${env:T}"}}},
			},
		},
		{
			name: "Cursor: envFile; url without type",
			in:   `{"mcpServers":{"db":{"command":"db-mcp","envFile":".env","env":{"A":"1"}},"web":{"url":"http://127.0.0.1:1/mcp"}}}`,
			want: []entrySummary{
				{Name: "db", Server: MCPServer{Command: "db-mcp", Env: map[string]string{"A": "1"}}, EnvFile: ".env"},
				{Name: "web", Server: MCPServer{URL: "http://127.0.0.1:1/mcp"}},
			},
		},
		{
			name: "the host's sessions members: reclaimIdle as a duration, 0s as -1",
			in:   `{"mcpServers":{"a":{"command":"x","maxSessions":4,"sharedIdle":"never","reclaimIdle":"2s","lendReads":false},"b":{"command":"y","reclaimIdle":"0s","lendReads":true}}}`,
			want: []entrySummary{
				{Name: "a", Server: MCPServer{Command: "x", MaxSessions: 4, SharedIdle: -1, ReclaimIdle: 2 * time.Second, LendReads: &no}},
				{Name: "b", Server: MCPServer{Command: "y", ReclaimIdle: -1, LendReads: &yes}},
			},
		},
		{
			name: "Windsurf: serverUrl",
			in:   `{"mcpServers":{"remote":{"serverUrl":"https://h/sse","headers":{"A":"b"}}}}`,
			want: []entrySummary{{Name: "remote", Server: MCPServer{URL: "https://h/sse", Headers: map[string]string{"A": "b"}}}},
		},
		{
			name: "VS Code mcp.json: servers, inputs, comments, trailing commas, an input fails its entry alone",
			in: `{
				// the inputs VS Code prompts for
				"inputs": [{"type":"promptString","id":"key","password":true}],
				"servers": {
					"gh": {"type":"http","url":"https://h/mcp","headers":{"Authorization":"Bearer ${input:key}"}},
					/* local */ "fs": {"type":"stdio","command":"fs","args":["${workspaceFolder}",],"dev":{"watch":"**"}},
				},
			}`,
			want: []entrySummary{
				{Name: "gh", Fault: "$.servers.gh.headers.Authorization: ${input:key} is a VS Code input, which the host cannot prompt for: put the value in \"env\" or an \"envFile\" instead"},
				{Name: "fs", Server: MCPServer{Command: "fs", Args: []string{"${workspaceFolder}"}}},
			},
			ignored: []string{"$.inputs", "$.servers.fs.dev"},
		},
		{
			name: "VS Code settings.json: mcp.servers among other settings",
			in:   `{"editor.fontSize":14,"mcp":{"servers":{"a":{"command":"x"}},"discovery":{"enabled":true}}}`,
			want: []entrySummary{{Name: "a", Server: MCPServer{Command: "x"}}},
			ignored: []string{
				`$["editor.fontSize"]`, "$.mcp.discovery",
			},
		},
		{
			name:    "a VS Code mcp setting without servers is someone else's",
			in:      `{"mcp":{"discovery":{}},"mcpServers":{"a":{"command":"x"}}}`,
			want:    []entrySummary{{Name: "a", Server: MCPServer{Command: "x"}}},
			ignored: []string{"$.mcp"},
		},
		{
			name: "names are mapped; a mapped name taken fails the later entry; a key valid as it is keeps its name",
			in: `{"mcpServers":{
				"my.server":{"command":"a"},
				"my server":{"command":"b"},
				"my_server":{"command":"c"},
				"ok-name_1":{"command":"d"},
				"":{"command":"e"},
				"` + strings.Repeat("x", 65) + `":{"command":"f"}}}`,
			want: []entrySummary{
				{Name: "my.server", Fault: `$.mcpServers["my.server"]: plugin name my_server (the name mapped to [a-zA-Z0-9_-]) is taken by server "my_server" of this file; rename one of them`},
				{Name: "my server", Fault: `$.mcpServers["my server"]: plugin name my_server (the name mapped to [a-zA-Z0-9_-]) is taken by server "my_server" of this file; rename one of them`},
				{Name: "my_server", Server: MCPServer{Command: "c"}},
				{Name: "ok-name_1", Server: MCPServer{Command: "d"}},
				{Name: `""`, Fault: `$.mcpServers[""]: a server needs a name: the key is empty`},
				{Name: strings.Repeat("x", 65), Fault: `$.mcpServers.` + strings.Repeat("x", 65) + `: server name is longer than 64 characters (it is the plugin's name)`},
			},
		},
		{
			name: "mapping: the first in the file gets the name",
			in:   `{"mcpServers":{"a.b":{"command":"x"},"a b":{"command":"y"},"ü":{"command":"z"}}}`,
			want: []entrySummary{
				{Name: "a_b", Server: MCPServer{Command: "x"}},
				{Name: "a b", Fault: `$.mcpServers["a b"]: plugin name a_b (the name mapped to [a-zA-Z0-9_-]) is taken by server "a.b" of this file; rename one of them`},
				{Name: "_", Server: MCPServer{Command: "z"}},
			},
		},
		{
			name: "members of the other kind of server are ignored",
			in:   `{"mcpServers":{"r":{"url":"http://h/","args":["x"],"env":{"A":"b"},"cwd":"c","envFile":"e"},"l":{"command":"x","headers":{"A":"b"}}}}`,
			want: []entrySummary{
				{Name: "r", Server: MCPServer{URL: "http://h/"}},
				{Name: "l", Server: MCPServer{Command: "x"}},
			},
			ignored: []string{"$.mcpServers.r.args", "$.mcpServers.r.cwd", "$.mcpServers.r.env", "$.mcpServers.r.envFile", "$.mcpServers.l.headers"},
		},
		{
			name: "both server lists: mcpServers first; a name in both fails the second",
			in:   `{"servers":{"a":{"command":"v"},"b":{"command":"w"}},"mcpServers":{"a":{"command":"x"}}}`,
			want: []entrySummary{
				{Name: "a", Server: MCPServer{Command: "x"}},
				{Name: "a (2)", Fault: `$.servers.a: plugin name a (the name mapped to [a-zA-Z0-9_-]) is taken by server "a" of this file; rename one of them`},
				{Name: "b", Server: MCPServer{Command: "w"}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseDesktop([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if got := summarize(cfg.Entries); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("entries:\n got %+v\nwant %+v", got, tc.want)
			}
			if !reflect.DeepEqual(cfg.Ignored, tc.ignored) {
				t.Errorf("ignored = %q, want %q", cfg.Ignored, tc.ignored)
			}
		})
	}
}

func TestParseDesktopEntryFaults(t *testing.T) {
	// Each fault fails its entry alone: entry "good" beside it parses.
	for _, tc := range []struct{ entry, want string }{
		{`[]`, "$.mcpServers.bad: must be an object"},
		{`{}`, `$.mcpServers.bad: needs "command" (a local server) or "url" (a remote one)`},
		{`{"command":7}`, "$.mcpServers.bad.command: must be a non-empty string"},
		{`{"command":"x","args":"a b"}`, "$.mcpServers.bad.args: must be an array of strings"},
		{`{"command":"x","env":[]}`, "$.mcpServers.bad.env: must be an object of strings"},
		{`{"command":"x","env":{"K":{}}}`, "$.mcpServers.bad.env.K: must be a string"},
		{`{"command":"x","envFile":""}`, "$.mcpServers.bad.envFile: must be a non-empty string"},
		{`{"url":"http://h/","headers":{"A":1}}`, "$.mcpServers.bad.headers.A: must be a string"},
		{`{"url":"http://h/","oauth":[]}`, "$.mcpServers.bad.oauth: must be an object"},
		{`{"url":"http://h/","oauth":{"clientID":"c"}}`, `$.mcpServers.bad.oauth.clientID: is not a member of "oauth" (clientId, clientSecret, privateKeyJwt, scopes, grant, issuer)`},
		{`{"url":"http://h/","oauth":{"grant":"password"}}`, `$.mcpServers.bad.oauth.grant: must be "authorization_code" or "client_credentials"`},
		{`{"url":"http://h/","oauth":{"scopes":"a b"}}`, "$.mcpServers.bad.oauth.scopes: must be an array of strings"},
		{`{"url":"http://h/","oauth":{"clientId":"c","privateKeyJwt":{}}}`, `$.mcpServers.bad.oauth.privateKeyJwt: needs "privateKey" (the client's private key, PEM)`},
		{`{"url":"http://h/","oauth":{"clientId":"c","privateKeyJwt":{"privateKey":"k","alg":"HS256"}}}`, `$.mcpServers.bad.oauth.privateKeyJwt.alg: is not a member of "privateKeyJwt" (privateKey, kid)`},
		{`{"url":"http://h/","oauth":{"clientId":"c","issuer":"https://as/","privateKeyJwt":{"privateKey":"k"}}}`, `$.mcpServers.bad.oauth.privateKeyJwt: is for "grant": "client_credentials" (a machine account)`},
		{`{"url":"http://h/","oauth":{"clientId":"c","grant":"client_credentials","privateKeyJwt":{"privateKey":"k"}}}`, `$.mcpServers.bad.oauth.privateKeyJwt: needs "clientId" and "issuer" (the authorization server the assertions are for)`},
		{`{"url":"http://h/","oauth":{"clientId":"c","clientSecret":"s","issuer":"https://as/","grant":"client_credentials","privateKeyJwt":{"privateKey":"k"}}}`, `$.mcpServers.bad.oauth.privateKeyJwt: has both "privateKeyJwt" and "clientSecret"; declare one`},
		{`{"url":"http://h/","oauth":{"clientSecret":"s"}}`, `$.mcpServers.bad.oauth.clientSecret: needs "clientId"`},
		{`{"url":"http://h/","oauth":{"clientId":"c","grant":"client_credentials"}}`, `$.mcpServers.bad.oauth.grant: "client_credentials" needs "clientId" and "clientSecret" or "privateKeyJwt"`},
		{`{"url":"http://h/","oauth":{"clientId":"c","clientSecret":"s"}}`, `$.mcpServers.bad.oauth.clientSecret: needs "issuer": the authorization server the secret may be sent to (else the server's metadata chooses it)`},
		{`{"url":"http://h/","oauth":{"issuer":"ftp://as/"}}`, `$.mcpServers.bad.oauth.issuer: must be an absolute https (or http) URL`},
		{`{"url":"http://h/","oauth":{"issuer":"https://as/?a=b"}}`, `$.mcpServers.bad.oauth.issuer: must have no query or fragment (RFC 8414)`},
		{`{"url":"http://h/","oauth":{},"headers":{"authorization":"Bearer x"}}`, `$.mcpServers.bad.oauth: has both "oauth" and an Authorization header; declare one`},
		{`{"type":"sse","url":"http://h/","oauth":{}}`, `$.mcpServers.bad.oauth: "oauth" needs streamable HTTP, not "type": "sse"`},
		{`{"url":"http://h/","serverUrl":"http://h/"}`, `$.mcpServers.bad: has both "url" and "serverUrl"; give one`},
		{`{"url":"http://h/","command":"x"}`, `$.mcpServers.bad: has both "command" and "url"; declare one`},
		{`{"url":"h/mcp"}`, "$.mcpServers.bad.url: must be an absolute http or https URL"},
		{`{"serverUrl":"file:///x"}`, "$.mcpServers.bad.serverUrl: must be an absolute http or https URL"},
		{`{"type":"stdio","url":"http://h/"}`, `$.mcpServers.bad.type: is "stdio", but the entry has a "url" and no "command"`},
		{`{"type":"http","command":"x"}`, `$.mcpServers.bad.type: is "http", but the entry has a "command" and no "url"`},
		{`{"type":3,"command":"x"}`, `$.mcpServers.bad.type: must be "stdio", "http", "streamable-http" or "sse"`},
		{`{"command":"x","disabled":1}`, "$.mcpServers.bad.disabled: must be true or false"},
		{`{"url":"http://h/","oauth":{},"credentials":"mine"}`, `$.mcpServers.bad.credentials: must be "shared" or "per-user"`},
		{`{"url":"http://h/","credentials":"per-user"}`, `$.mcpServers.bad.credentials: "per-user" needs "url" and "oauth": each caller logs in for itself`},
		{`{"command":"x","credentials":"per-user"}`, `$.mcpServers.bad.credentials: "per-user" needs "url" and "oauth": each caller logs in for itself`},
		{`{"url":"http://h/","credentials":"per-user","oauth":{"clientId":"c","clientSecret":"s","grant":"client_credentials"}}`, `$.mcpServers.bad.credentials: "per-user" needs a person's login ("grant": "authorization_code"), not "client_credentials", a machine account shared by every caller`},
		{`{"command":"x","sessions":"per-call"}`, `$.mcpServers.bad.sessions: must be "per-client" or "shared"`},
		{`{"command":"x","lendReads":"no"}`, "$.mcpServers.bad.lendReads: must be true or false"},
		{`{"command":"x","maxSessions":0}`, "$.mcpServers.bad.maxSessions: must be an integer from 1 to 256"},
		{`{"command":"x","maxSessions":1.5}`, "$.mcpServers.bad.maxSessions: must be an integer from 1 to 256"},
		{`{"command":"x","maxSessions":1000}`, "$.mcpServers.bad.maxSessions: must be an integer from 1 to 256"},
		{`{"command":"x","maxSessionsPerKey":0}`, "$.mcpServers.bad.maxSessionsPerKey: must be an integer from 1 to 256"},
		{`{"command":"x","maxSessionsPerKey":"4"}`, "$.mcpServers.bad.maxSessionsPerKey: must be an integer from 1 to 256"},
		{`{"command":"x","maxSessionsPerKey":257}`, "$.mcpServers.bad.maxSessionsPerKey: must be an integer from 1 to 256"},
		{`{"command":"x","reclaimIdle":"-1s"}`, `$.mcpServers.bad.reclaimIdle: must be a duration from 0s to 24h0m0s ("5s")`},
		{`{"command":"x","reclaimIdle":5}`, `$.mcpServers.bad.reclaimIdle: must be a duration from 0s to 24h0m0s ("5s")`},
		{`{"command":"x","reclaimIdle":"25h"}`, `$.mcpServers.bad.reclaimIdle: must be a duration from 0s to 24h0m0s ("5s")`},
		{`{"command":"x","sharedIdle":"10ms"}`, `$.mcpServers.bad.sharedIdle: must be a duration from 100ms to 24h0m0s ("30s"), or "never"`},
		{`{"command":"x","sharedIdle":30}`, `$.mcpServers.bad.sharedIdle: must be a duration from 100ms to 24h0m0s ("30s"), or "never"`},
		{`{"command":"x","sharedIdle":"soon"}`, `$.mcpServers.bad.sharedIdle: must be a duration from 100ms to 24h0m0s ("30s"), or "never"`},
		{`{"command":"${config:x}"}`, "$.mcpServers.bad.command: ${config:x} is not a variable the host knows"},
		{`{"command":"x","cwd":"${input:dir}"}`, "$.mcpServers.bad.cwd: ${input:dir} is a VS Code input"},
	} {
		cfg, err := ParseDesktop([]byte(`{"mcpServers":{"bad":` + tc.entry + `,"good":{"command":"g"}}}`))
		if err != nil {
			t.Errorf("%s: the whole file failed: %v", tc.entry, err)
			continue
		}
		got := summarize(cfg.Entries)
		if len(got) != 2 || !strings.HasPrefix(got[0].Fault, tc.want) {
			t.Errorf("%s: fault %q, want %q", tc.entry, got[0].Fault, tc.want)
		}
		if len(got) == 2 && (got[1].Fault != "" || got[1].Server.Command != "g") {
			t.Errorf("%s: the good entry = %+v", tc.entry, got[1])
		}
	}
}

func TestParseDesktopFileFaults(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`[]`, "$: must be a JSON object"},
		{`{"mcpServers":`, "$: "},
		{`{"mcpServers":{}} /* open`, "$: a /* comment does not end"},
		{`{}`, `$: has no server list: "mcpServers" (Claude Desktop, Claude Code, Cursor, Windsurf) or "servers" (VS Code)`},
		{`{"mcp":"x"}`, `$: has no server list`},
		{`{"mcpServers":[]}`, "$.mcpServers: must be an object of servers keyed by name"},
		{`{"servers":null}`, "$.servers: must be an object of servers keyed by name"},
		{`{"mcp":{"servers":3}}`, "$.mcp.servers: must be an object of servers keyed by name"},
		{`{"mcpServers":{"a":{"command":"x","command":"y"}}}`, "$.mcpServers.a.command: duplicate member"},
		{string(make([]byte, MaxFileBytes+1)), "$: the file is larger than"},
	} {
		_, err := ParseDesktop([]byte(tc.in))
		if err == nil || !strings.HasPrefix(faultText(err), tc.want) {
			t.Errorf("ParseDesktop(%.60s) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestMapName(t *testing.T) {
	for _, tc := range []struct{ key, want, err string }{
		{"notes", "notes", ""},
		{"a-b_C9", "a-b_C9", ""},
		{"my.server", "my_server", ""},
		{"My Server (beta)", "My_Server_beta_", ""},
		{"db__conn", "db_conn", ""},
		{"a-_b", "a_b", ""},
		{"ns/tool", "ns_tool", ""},
		{"café", "caf_", ""},
		{"", "", "empty"},
		{strings.Repeat("a", 64), strings.Repeat("a", 64), ""},
		{strings.Repeat("a", 65), "", "longer than 64"},
		{strings.Repeat("é", 64), "_", ""},
	} {
		got, err := MapName(tc.key)
		if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("MapName(%q) = %q, %v; want %q, %q", tc.key, got, err, tc.want, tc.err)
		}
	}
}

// entry parses a file of one server "s" and returns it.
func entry(t *testing.T, server string) DesktopEntry {
	t.Helper()
	cfg, err := ParseDesktop([]byte(`{"mcpServers":{"s":` + server + `}}`))
	if err != nil || len(cfg.Entries) != 1 {
		t.Fatalf("ParseDesktop(%s) = %+v, %v", server, cfg, err)
	}
	return cfg.Entries[0]
}

func TestResolveVariables(t *testing.T) {
	dir := t.TempDir()
	vscode := filepath.Join(dir, "proj", ".vscode")
	env := map[string]string{"TOKEN": "t0k", "EMPTY": "", "HOME": "/home/op", "BASE": "https://api.example"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	operator := Origin{Dir: dir, Operator: true, LookupEnv: lookup}
	dropIn := Origin{Dir: dir, LookupEnv: lookup}
	for _, tc := range []struct {
		name   string
		origin Origin
		server string
		want   MCPServer
		err    string
	}{
		{"operator: ${env:VAR} and ${VAR} in command, args, env", operator,
			`{"command":"${userHome}/bin/x","args":["--token=${env:TOKEN}","${TOKEN}","$TOKEN","${"],"env":{"T":"${TOKEN}"}}`,
			MCPServer{Command: "/home/op/bin/x", Args: []string{"--token=t0k", "t0k", "$TOKEN", "${"}, Env: map[string]string{"T": "t0k"}}, ""},
		{"operator: defaults", operator,
			`{"command":"x","args":["${UNSET:-d}","${EMPTY:-e}","${TOKEN:-f}","${UNSET:-}"]}`,
			MCPServer{Command: "x", Args: []string{"d", "e", "t0k", ""}}, ""},
		{"operator: url and headers", operator,
			`{"type":"sse","url":"${BASE}/sse","headers":{"Authorization":"Bearer ${env:TOKEN}"}}`,
			MCPServer{URL: "https://api.example/sse", Headers: map[string]string{"Authorization": "Bearer t0k"}, Transport: TransportSSE}, ""},
		{"operator: oauth client secret", operator,
			`{"url":"${BASE}/mcp","oauth":{"clientId":"c","clientSecret":"${env:TOKEN}","scopes":["read"],"grant":"client_credentials","issuer":"https://as.example/"}}`,
			MCPServer{URL: "https://api.example/mcp", OAuth: &OAuth{ClientID: "c", ClientSecret: "t0k", Scopes: []string{"read"}, Grant: GrantClientCredentials, Issuer: "https://as.example/"}}, ""},
		{"drop-in: oauth client secret", dropIn, `{"url":"http://h/","oauth":{"clientId":"c","clientSecret":"${env:TOKEN}","issuer":"https://as.example/"}}`,
			MCPServer{}, "$.mcpServers.s.oauth.clientSecret: ${env:TOKEN}: a drop-in file"},
		{"operator: unset variable fails", operator, `{"command":"x","env":{"A":"${env:NOPE}"}}`,
			MCPServer{}, "$.mcpServers.s.env.A: ${env:NOPE}: NOPE is not set in the host's environment (write ${NOPE:-} for an empty default)"},
		{"operator: a url that is not one once expanded", operator, `{"url":"${TOKEN}"}`,
			MCPServer{}, "$.mcpServers.s.url: must be an absolute http or https URL"},
		{"operator: workspaceFolder of a .vscode file is its parent", Origin{Dir: vscode, Operator: true},
			`{"command":"x","args":["${workspaceFolder}","${workspaceFolderBasename}","a${/}b${pathSeparator}c"],"cwd":"${workspaceFolder}"}`,
			MCPServer{Command: "x", Args: []string{filepath.Join(dir, "proj"), "proj", "a/b/c"}, Cwd: filepath.Join(dir, "proj")}, ""},
		{"drop-in: ${env:VAR} fails", dropIn, `{"command":"x","env":{"T":"${env:TOKEN}"}}`,
			MCPServer{}, "$.mcpServers.s.env.T: ${env:TOKEN}: a drop-in file of the plugins folder may not read the host's environment"},
		{"drop-in: ${VAR} fails", dropIn, `{"command":"x","args":["${TOKEN}"]}`,
			MCPServer{}, "$.mcpServers.s.args[0]: ${TOKEN}: a drop-in file"},
		{"drop-in: ${VAR:-default} fails too", dropIn, `{"url":"${BASE:-http://h}/mcp"}`,
			MCPServer{}, "$.mcpServers.s.url: ${BASE:-http://h}: a drop-in file"},
		{"drop-in: ${userHome} fails", dropIn, `{"command":"${userHome}/x"}`,
			MCPServer{}, "$.mcpServers.s.command: ${userHome}: a drop-in file"},
		{"drop-in: headers", dropIn, `{"url":"http://h/","headers":{"A":"${env:TOKEN}"}}`,
			MCPServer{}, "$.mcpServers.s.headers.A: ${env:TOKEN}: a drop-in file"},
		{"drop-in: ${workspaceFolder} is its own folder", dropIn, `{"command":"x","args":["${workspaceFolder}/data"]}`,
			MCPServer{Command: "x", Args: []string{dir + "/data"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := entry(t, tc.server)
			got, err := e.Resolve(tc.origin)
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("Resolve = %+v, %v; want error %q", got, err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Resolve = %+v, %v; want %+v", got, err, tc.want)
			}
			if again := entry(t, tc.server); !reflect.DeepEqual(again.Server, e.Server) {
				t.Fatalf("Resolve changed the entry: %+v", e.Server)
			}
		})
	}
}

func TestResolveEnvFile(t *testing.T) {
	root := t.TempDir()
	plugins := filepath.Join(root, "plugins")
	outside := filepath.Join(root, "secret.env")
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(plugins, ".env"), "A=from-file\nB=from-file\n")
	write(filepath.Join(plugins, "sub", "x.env"), "C=3\n")
	write(filepath.Join(plugins, "bad.env"), "A=1\nnot a line\n")
	write(outside, "STOLEN=yes\n")
	if err := os.Symlink(outside, filepath.Join(plugins, "link.env")); err != nil {
		t.Fatal(err)
	}
	dropIn := Origin{Dir: plugins}
	operator := Origin{Dir: plugins, Operator: true}
	for _, tc := range []struct {
		name    string
		origin  Origin
		envFile string
		want    map[string]string
		err     string
	}{
		{"relative to the file's folder; env wins", dropIn, ".env", map[string]string{"A": "from-env", "B": "from-file"}, ""},
		{"a subfolder", dropIn, "sub/x.env", map[string]string{"A": "from-env", "C": "3"}, ""},
		{"${workspaceFolder}", dropIn, "${workspaceFolder}/.env", map[string]string{"A": "from-env", "B": "from-file"}, ""},
		{"drop-in: outside its folder", dropIn, "../secret.env", nil, "is outside the plugins folder"},
		{"drop-in: absolute outside", dropIn, outside, nil, "is outside the plugins folder"},
		{"drop-in: a symlink out of the folder", dropIn, "link.env", nil, "a drop-in file may read an envFile inside the plugins folder only"},
		{"operator: anywhere", operator, "../secret.env", map[string]string{"A": "from-env", "STOLEN": "yes"}, ""},
		{"missing", operator, "nope.env", nil, "no such file"},
		{"a folder", operator, "sub", nil, "is not a regular file"},
		{"a bad line", dropIn, "bad.env", nil, "bad.env: line 2: want KEY=VALUE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := entry(t, `{"command":"x","env":{"A":"from-env"},"envFile":"`+tc.envFile+`"}`)
			got, err := e.Resolve(tc.origin)
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), "$.mcpServers.s.envFile: ") || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Resolve = %+v, %v; want error %q", got, err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got.Env, tc.want) {
				t.Fatalf("Resolve env = %v, %v; want %v", got.Env, err, tc.want)
			}
		})
	}
}

func TestParseDotenv(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]string
		err  string
	}{
		{"", map[string]string{}, ""},
		{"A=1\nB = two words \n\n# comment\n  C=3", map[string]string{"A": "1", "B": "two words", "C": "3"}, ""},
		{"export A=1\r\nB=2\r\n", map[string]string{"A": "1", "B": "2"}, ""},
		{"\xef\xbb\xbfA=1", map[string]string{"A": "1"}, ""},
		{"A=x # comment\nB=x#not\nC=", map[string]string{"A": "x", "B": "x#not", "C": ""}, ""},
		{`A='lit ${X} \n'` + "\n" + `B="esc \"q\" \\ \$X \n \t \x"`, map[string]string{"A": `lit ${X} \n`, "B": "esc \"q\" \\ $X \n \t \\x"}, ""},
		{"A=${HOME}\nB=$HOME", map[string]string{"A": "${HOME}", "B": "$HOME"}, ""},
		{"K=\"line1\nline2\"  # c\nL=after", map[string]string{"K": "line1\nline2", "L": "after"}, ""},
		{"K='a\n\nb'\nL=2", map[string]string{"K": "a\n\nb", "L": "2"}, ""},
		{"A=1\nA=2", map[string]string{"A": "2"}, ""},
		{"A=\"  spaced  \"", map[string]string{"A": "  spaced  "}, ""},
		{"A=1\nB", nil, "line 2: want KEY=VALUE"},
		{"1A=x", nil, `line 1: "1A" is not a variable name`},
		{"A-B=x", nil, `line 1: "A-B" is not a variable name`},
		{"A=1\nB=\"open\nC=3", nil, "line 2: the \" quote does not close"},
		{"A='x' y", nil, `line 1: unexpected "y" after the closing quote`},
		{"A=\"x\"\nB=\x00", nil, "line 2: the value of B has a NUL byte"},
		{"A=\xff", nil, "not UTF-8"},
	} {
		got, err := ParseDotenv([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseDotenv(%q) = %v, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseDotenv(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
