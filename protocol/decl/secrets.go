package decl

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// OperatorSecrets are the secrets the operator declares on the host's
// command line: the values of --secret (each NAME=env:VAR or
// NAME=file:PATH, a relative PATH from the working folder) and the
// secrets file at file ("" for none; relative paths in it from its own
// folder, its "plugins" the plugins each is granted to), with the grants
// of --secret-for added (each NAME=PLUGIN[,PLUGIN...]: the plugins whose
// policies may name secret NAME). own are the host's own files (the API
// keys file, the secrets file), which can never be a secret's file. It
// returns nil for none. Errors: a malformed --secret or --secret-for, a
// secrets file that does not read or parse (with its JSON path), a name
// declared twice, a host variable (OPENTOOL_*, CheckSecretDecl), one of
// own as a secret's file, or a grant of a secret that is not declared.
func OperatorSecrets(flags, grants []string, file string, own []string) (map[string]Secret, error) {
	out := map[string]Secret{}
	add := func(where, name string, s Secret, base string) error {
		if _, dup := out[name]; dup {
			return fmt.Errorf("%s: secret %s is declared twice", where, name)
		}
		if err := CheckSecretDecl(where, name, s); err != nil {
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
	for _, v := range flags {
		name, s, err := parseSecretFlag(v)
		if err != nil {
			return nil, err
		}
		if err := add("--secret "+name, name, s, cwd); err != nil {
			return nil, err
		}
	}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--secrets-file: %w", err)
		}
		f, err := ParseSecretsFile(data)
		if err != nil {
			return nil, fmt.Errorf("--secrets-file %s: %w", file, err)
		}
		base, _ := filepath.Abs(filepath.Dir(file))
		for name, s := range f.Secrets {
			if err := add("--secrets-file "+file+": $.secrets."+name, name, s, base); err != nil {
				return nil, err
			}
		}
	}
	for _, v := range grants {
		if err := addGrant(out, v); err != nil {
			return nil, err
		}
	}
	for _, o := range own {
		for name, s := range out {
			if o != "" && s.File != "" && samePath(s.File, o) {
				return nil, fmt.Errorf("secret %s: %s is the host's own file and can never be a plugin's secret", name, s.File)
			}
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// parseSecretFlag parses one --secret value, NAME=env:VAR or
// NAME=file:PATH.
func parseSecretFlag(v string) (string, Secret, error) {
	name, src, ok := strings.Cut(v, "=")
	kind, ref, ok2 := strings.Cut(src, ":")
	switch {
	case !ok || !ok2 || ref == "":
		return "", Secret{}, fmt.Errorf("--secret %q: want NAME=env:VAR or NAME=file:PATH", v)
	case kind == "env":
		return name, Secret{Env: ref}, nil
	case kind == "file":
		return name, Secret{File: ref}, nil
	}
	return "", Secret{}, fmt.Errorf("--secret %q: the source is env:VAR or file:PATH, not %s:", v, kind)
}

// addGrant adds one --secret-for value, NAME=PLUGIN[,PLUGIN...], to the
// declared secret NAME of secrets.
func addGrant(secrets map[string]Secret, v string) error {
	name, list, ok := strings.Cut(v, "=")
	if !ok || name == "" || list == "" {
		return fmt.Errorf("--secret-for %q: want NAME=PLUGIN[,PLUGIN...]", v)
	}
	s, ok := secrets[name]
	if !ok {
		return fmt.Errorf("--secret-for %s: no secret %s is declared (declare it with --secret %s=env:VAR, --secret %s=file:PATH or in the --secrets-file)", v, name, name, name)
	}
	for _, plugin := range strings.Split(list, ",") {
		if !ValidPluginName(plugin) {
			return fmt.Errorf("--secret-for %s: %q is not a plugin name (%s)", v, plugin, pluginNameRule)
		}
		if !s.GrantedTo(plugin) {
			s.Plugins = append(s.Plugins, plugin)
		}
	}
	secrets[name] = s
	return nil
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
