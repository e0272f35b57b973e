package decl

import (
	"errors"
	"testing"
)

func TestParsePolicy(t *testing.T) {
	p, err := ParsePolicy([]byte(`{"timeout_ms": 5000, "max_concurrency": 4, "prefix": "fs_",
		"env": {"FILES_MODE": "ro"}, "secrets": {"API_TOKEN": "files-token", "DB": "db-url"},
		"limits": {"memory_mb": 256, "cpu_percent": 50, "cpu_seconds": 600, "processes": 32},
		"sandbox": {"read": [".."], "write": ["/tmp/x"], "network": "deny", "connect_tcp": [443]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if p.TimeoutMS != 5000 || p.Prefix != "fs_" || p.Secrets["DB"] != "db-url" || p.Limits.MemoryMB != 256 || p.Sandbox.ConnectTCP[0] != 443 {
		t.Errorf("%+v", p)
	}
	if p, err := ParsePolicy([]byte(`{}`)); err != nil || p.Sandbox != nil {
		t.Errorf("empty policy: %+v %v", p, err)
	}
}

func TestParsePolicyFaults(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`[]`, "$: must be a JSON object"},
		{`{"timeout":1}`, "$.timeout: unknown member"},
		{`{"timeout_ms":"5"}`, "$.timeout_ms: must be an integer"},
		{`{"timeout_ms":-1}`, "$.timeout_ms: must be within 1..86400000"},
		{`{"max_concurrency":-2}`, "$.max_concurrency: must be at least 1"},
		{`{"prefix":"a b"}`, "$.prefix: must match [a-zA-Z0-9_-]{1,32}"},
		{`{"env":{"1X":"v"}}`, "$.env.1X: is not a variable name ([A-Za-z_][A-Za-z0-9_]*)"},
		{`{"env":{"LD_PRELOAD":"/tmp/x.so"}}`, "$.env.LD_PRELOAD: is set by the host and may not be set by a policy"},
		{`{"env":{"OPENTOOL_PLUGIN":"x"}}`, "$.env.OPENTOOL_PLUGIN: is set by the host and may not be set by a policy"},
		// A policy names secrets; where they are read from is the host's.
		{`{"secrets":{"STOLEN_KEYS":{"env":"OPENTOOL_API_KEYS"}}}`, `$.secrets.STOLEN_KEYS: a policy names a secret the operator declared on the host ("STOLEN_KEYS": "NAME"); where a secret is read from is the operator's: declare it with --secret NAME=env:VAR or --secret NAME=file:PATH (or --secrets-file) and grant it to this plugin with --secret-for NAME=PLUGIN`},
		{`{"secrets":{"SHADOW":{"file":"/etc/shadow"}}}`, `$.secrets.SHADOW: a policy names a secret the operator declared on the host ("SHADOW": "NAME"); where a secret is read from is the operator's: declare it with --secret NAME=env:VAR or --secret NAME=file:PATH (or --secrets-file) and grant it to this plugin with --secret-for NAME=PLUGIN`},
		{`{"secrets":{"T":{}}}`, `$.secrets.T: a policy names a secret the operator declared on the host ("T": "NAME"); where a secret is read from is the operator's: declare it with --secret NAME=env:VAR or --secret NAME=file:PATH (or --secrets-file) and grant it to this plugin with --secret-for NAME=PLUGIN`},
		{`{"secrets":{"T":3}}`, "$.secrets: must be a string"},
		{`{"secrets":{"T":"a b"}}`, "$.secrets.T: must name a secret the operator declared on the host ([A-Za-z0-9_.-]{1,64})"},
		{`{"env":{"T":"x"},"secrets":{"T":"t"}}`, "$.secrets.T: is also set in env"},
		{`{"limits":{"memory_mb":-5}}`, "$.limits.memory_mb: must be at least 1"},
		{`{"sandbox":{"network":"some"}}`, `$.sandbox.network: must be "allow" or "deny"`},
		{`{"sandbox":{"read":[""]}}`, "$.sandbox.read[0]: must not be empty"},
		{`{"sandbox":{"connect_tcp":[443]}}`, `$.sandbox.connect_tcp: only applies with "network": "deny"`},
		{`{"sandbox":{"network":"deny","connect_tcp":[70000]}}`, "$.sandbox.connect_tcp[0]: must be a TCP port (1..65535)"},
		{`{"prefix":"a","prefix":"b"}`, `$.prefix: duplicate member`},
		{`{"env":{"A":"1","A":"2"}}`, `$.env.A: duplicate member`},
	} {
		_, err := ParsePolicy([]byte(c.in))
		var f *Fault
		if !errors.As(err, &f) || f.Path+": "+f.Message != c.want || f.Line != 1 {
			t.Errorf("ParsePolicy(%s) = %v, want %q on line 1", c.in, err, c.want)
		}
	}
}
