package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/internal/decl"
)

// secretFlags are the operator's secrets: the only values a plugin's
// policy may hand its plugin ("secrets": {"VAR": "NAME"}).
func secretFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "secret", Usage: "declare secret `NAME=env:VAR` (the host's variable VAR) or NAME=file:PATH (a file, trailing newlines removed), read at each plugin start (repeatable). " +
			"A plugin gets a secret only when its NAME.policy.json names it (\"secrets\": {\"VAR\": \"NAME\"}); OPENTOOL_* variables and the API keys file can never be secrets"},
		&cli.StringFlag{Name: "secrets-file", Usage: "declare the secrets of JSON `FILE` ({\"secrets\": {\"NAME\": {\"env\": \"VAR\"} | {\"file\": \"PATH\"}}}; relative paths from the file's folder), as --secret does"},
	}
}

// secretsConfig returns the secrets of --secret and --secrets-file, file
// paths made absolute. Errors (usage, exit 2): a malformed --secret, a
// secrets file that does not parse (with its JSON path), a name declared
// twice, a host variable (OPENTOOL_*), or the API keys file or the
// secrets file itself as a secret's file.
func secretsConfig(c *cli.Context) (map[string]decl.Secret, error) {
	out := map[string]decl.Secret{}
	add := func(where, name string, s decl.Secret, base string) error {
		if _, dup := out[name]; dup {
			return fmt.Errorf("%s: secret %s is declared twice", where, name)
		}
		if err := decl.CheckSecretDecl(where, name, s); err != nil {
			return err
		}
		if s.File != "" && !filepath.IsAbs(s.File) {
			s.File = filepath.Join(base, s.File)
		}
		out[name] = s
		return nil
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	for _, v := range c.StringSlice("secret") {
		name, src, ok := strings.Cut(v, "=")
		kind, ref, ok2 := strings.Cut(src, ":")
		var s decl.Secret
		switch {
		case !ok || !ok2 || ref == "":
			return nil, cli.Exit(fmt.Sprintf("--secret %q: want NAME=env:VAR or NAME=file:PATH", v), 2)
		case kind == "env":
			s.Env = ref
		case kind == "file":
			s.File = ref
		default:
			return nil, cli.Exit(fmt.Sprintf("--secret %q: the source is env:VAR or file:PATH, not %s:", v, kind), 2)
		}
		if err := add("--secret "+name, name, s, cwd); err != nil {
			return nil, cli.Exit(err.Error(), 2)
		}
	}
	if path := c.String("secrets-file"); path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, cli.Exit(fmt.Sprintf("--secrets-file: %v", err), 2)
		}
		f, err := decl.ParseSecretsFile(data)
		if err != nil {
			return nil, cli.Exit(fmt.Sprintf("--secrets-file %s: %v", path, err), 2)
		}
		base, _ := filepath.Abs(filepath.Dir(path))
		for name, s := range f.Secrets {
			if err := add("--secrets-file "+path+": $.secrets."+name, name, s, base); err != nil {
				return nil, cli.Exit(err.Error(), 2)
			}
		}
	}
	for _, own := range []string{c.String("api-keys-file"), os.Getenv("OPENTOOL_API_KEYS_FILE"), c.String("secrets-file")} {
		for name, s := range out {
			if own != "" && s.File != "" && samePath(s.File, own) {
				return nil, cli.Exit(fmt.Sprintf("secret %s: %s is the host's own file and can never be a plugin's secret", name, s.File), 2)
			}
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// samePath reports whether a and b name the same file (after symlinks,
// when both exist).
func samePath(a, b string) bool {
	if fa, err := os.Stat(a); err == nil {
		if fb, err := os.Stat(b); err == nil {
			return os.SameFile(fa, fb)
		}
	}
	aa, _ := filepath.Abs(a)
	bb, _ := filepath.Abs(b)
	return aa == bb
}
