package decl

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestOperatorSecretsGrants: --secret-for and the secrets file's
// "plugins" grant a secret to exact plugin names, added together without
// repeats; a secret without a grant is declared for no plugin.
func TestOperatorSecretsGrants(t *testing.T) {
	file := filepath.Join(t.TempDir(), "secrets.json")
	if err := os.WriteFile(file, []byte(`{"secrets": {
		"db": {"env": "DB_URL", "plugins": ["files", "reports"]},
		"spare": {"file": "spare"}
	}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := OperatorSecrets([]string{"vault-token=env:VAULT_TOKEN", "free=env:FREE"},
		[]string{"vault-token=vault", "db=reports,audit", "vault-token=vault,My_Vault"}, file, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		"vault-token": {"vault", "My_Vault"}, "db": {"files", "reports", "audit"}, "spare": nil, "free": nil,
	} {
		if !slices.Equal(got[name].Plugins, want) {
			t.Errorf("%s granted to %q, want %q", name, got[name].Plugins, want)
		}
	}
	s := got["vault-token"]
	if !s.GrantedTo("vault") || s.GrantedTo("Vault") || s.GrantedTo("vault-2") || got["free"].GrantedTo("vault") {
		t.Errorf("GrantedTo is not by exact name: %+v", s)
	}
	if got["spare"].File != filepath.Join(filepath.Dir(file), "spare") {
		t.Errorf("spare's file %q", got["spare"].File)
	}
}

// TestOperatorSecretsGrantFaults: a grant that cannot hold is an error
// naming the flag or the file's JSON path and what is wrong.
func TestOperatorSecretsGrantFaults(t *testing.T) {
	dir := t.TempDir()
	n := 0
	file := func(body string) string {
		n++
		path := filepath.Join(dir, strconv.Itoa(n)+".json")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, c := range []struct {
		flags, grants []string
		file, want    string
	}{
		{[]string{"a=env:A"}, []string{"b=vault"}, "", "--secret-for b=vault: no secret b is declared (declare it with --secret b=env:VAR, --secret b=file:PATH or in the --secrets-file)"},
		{nil, []string{"a"}, "", `--secret-for "a": want NAME=PLUGIN[,PLUGIN...]`},
		{[]string{"a=env:A"}, []string{"=vault"}, "", `--secret-for "=vault": want NAME=PLUGIN[,PLUGIN...]`},
		{[]string{"a=env:A"}, []string{"a="}, "", `--secret-for "a=": want NAME=PLUGIN[,PLUGIN...]`},
		{[]string{"a=env:A"}, []string{"a=vault,"}, "", `--secret-for a=vault,: "" is not a plugin name`},
		{[]string{"a=env:A"}, []string{"a=../vault"}, "", `--secret-for a=../vault: "../vault" is not a plugin name ([a-zA-Z0-9_-]{1,64}, no two of "_" and "-" in a row)`},
		{[]string{"a=env:A"}, []string{"a=my__files"}, "", `"my__files" is not a plugin name`},
		{nil, nil, file(`{"secrets": {"db": {"env": "DB", "plugins": ["ok", "a b"]}}}`), `$.secrets.db.plugins[1]: "a b" is not a plugin name`},
		{nil, nil, file(`{"secrets": {"db": {"env": "DB", "plugins": "files"}}}`), `plugins: must be an array`},
		{nil, nil, file(`{"secrets": {"db": {"env": "DB", "plugin": ["files"]}}}`), `$.secrets.db.plugin: unknown member`},
	} {
		_, err := OperatorSecrets(c.flags, c.grants, c.file, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("flags %q grants %q file %q: %v, want %q", c.flags, c.grants, c.file, err, c.want)
		}
	}
}
