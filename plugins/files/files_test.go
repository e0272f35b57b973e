package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/testkit"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// setup makes this layout and returns the toolkit over root:
//
//	outside/secret.txt          "top secret\n"
//	root/a.txt                  "hello\nworld\nhello again\n"
//	root/sub/b.txt              "nested hello\n"
//	root/bin.dat                binary, contains "hello"
//	root/.git/config            "hello from git\n"
//	root/escape      -> ../outside        (symlink leaving the root)
//	root/escfile     -> ../outside/secret.txt
//	root/abs         -> <abs>/outside/secret.txt
//	root/inlink      -> sub/b.txt         (symlink inside the root)
func setup(t *testing.T) (*pluginsdk.Toolkit, string) {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "sub"), filepath.Join(root, ".git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(outside, "secret.txt"):  "top secret\n",
		filepath.Join(root, "a.txt"):          "hello\nworld\nhello again\n",
		filepath.Join(root, "sub", "b.txt"):   "nested hello\n",
		filepath.Join(root, "bin.dat"):        "hello\x00\x01\x02",
		filepath.Join(root, ".git", "config"): "hello from git\n",
	}
	for name, data := range files {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"escape":  filepath.Join("..", "outside"),
		"escfile": filepath.Join("..", "outside", "secret.txt"),
		"abs":     filepath.Join(outside, "secret.txt"),
		"inlink":  filepath.Join("sub", "b.txt"),
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Skipf("symlinks not supported: %v", err)
		}
	}
	ft, err := newFilesTool(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ft.Close() })
	return ft.toolkit(), root
}

// call runs name with args (a JSON object) and decodes the result into out.
func call(tk *pluginsdk.Toolkit, name, args string, out any) error {
	raw, err := tk.CallJSON(context.Background(), name, []byte(args))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decode %s: %w", raw, err)
	}
	return nil
}

func TestDocument(t *testing.T) {
	tk, _ := setup(t)
	doc, err := tk.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := opentool.Validate(doc); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	params := map[string][]string{}
	for _, f := range doc.Functions {
		for _, p := range f.Parameters {
			name := p.Name
			if p.Required {
				name += "*"
			}
			params[f.Name] = append(params[f.Name], name)
		}
	}
	want := map[string][]string{
		"list_dir":    {"path"},
		"read_text":   {"path*", "max_bytes"},
		"search_text": {"pattern*", "regexp", "path", "max_matches"},
	}
	if !reflect.DeepEqual(params, want) {
		t.Errorf("parameters (* = required) = %v, want %v", params, want)
	}
}

func TestListDir(t *testing.T) {
	tk, _ := setup(t)
	for _, args := range []string{`{}`, `{"path":"."}`, `{"path":"sub/.."}`} {
		var out listDirOut
		if err := call(tk, "list_dir", args, &out); err != nil {
			t.Fatalf("list_dir(%s): %v", args, err)
		}
		got := map[string]string{}
		for _, e := range out.Entries {
			got[e.Name] = e.Type
			if e.Name == "a.txt" && e.Size != 24 {
				t.Errorf("a.txt size = %d, want 24", e.Size)
			}
		}
		want := map[string]string{
			"a.txt": "file", "bin.dat": "file", "sub": "dir", ".git": "dir",
			"escape": "symlink", "escfile": "symlink", "abs": "symlink", "inlink": "symlink",
		}
		if !reflect.DeepEqual(got, want) || out.Truncated {
			t.Errorf("list_dir(%s) = %v (truncated %v), want %v", args, got, out.Truncated, want)
		}
	}
	var out listDirOut
	if err := call(tk, "list_dir", `{"path":"sub"}`, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Entries) != 1 || out.Entries[0] != (entry{Name: "b.txt", Type: "file", Size: 13}) {
		t.Errorf("list_dir(sub) = %+v", out.Entries)
	}
	testkit.WantToolError(t, call(tk, "list_dir", `{"path":"a.txt"}`, &out), pluginsdk.CodeInvalidArguments, "not a folder")
	testkit.WantToolError(t, call(tk, "list_dir", `{"path":"nope"}`, &out), pluginsdk.CodeInvalidArguments, `"nope" does not exist`)
}

func TestReadFile(t *testing.T) {
	tk, _ := setup(t)
	for _, tc := range []struct {
		args string
		want readFileOut
	}{
		{`{"path":"a.txt"}`, readFileOut{Content: "hello\nworld\nhello again\n", Size: 24}},
		{`{"path":"./sub/../a.txt"}`, readFileOut{Content: "hello\nworld\nhello again\n", Size: 24}},
		{`{"path":"a.txt","max_bytes":5}`, readFileOut{Content: "hello", Truncated: true, Size: 24}},
		{`{"path":"a.txt","max_bytes":24}`, readFileOut{Content: "hello\nworld\nhello again\n", Size: 24}},
		{`{"path":"a.txt","max_bytes":99999999}`, readFileOut{Content: "hello\nworld\nhello again\n", Size: 24}},
		{`{"path":"inlink"}`, readFileOut{Content: "nested hello\n", Size: 13}},
	} {
		var out readFileOut
		if err := call(tk, "read_text", tc.args, &out); err != nil {
			t.Errorf("read_text(%s): %v", tc.args, err)
			continue
		}
		if out != tc.want {
			t.Errorf("read_text(%s) = %+v, want %+v", tc.args, out, tc.want)
		}
	}
	var out readFileOut
	testkit.WantToolError(t, call(tk, "read_text", `{"path":"sub"}`, &out), pluginsdk.CodeInvalidArguments, "not a regular file")
	testkit.WantToolError(t, call(tk, "read_text", `{"path":"nope.txt"}`, &out), pluginsdk.CodeInvalidArguments, "does not exist")
	testkit.WantToolError(t, call(tk, "read_text", `{"path":"bin.dat"}`, &out), pluginsdk.CodeInvalidArguments, "binary")
	testkit.WantToolError(t, call(tk, "read_text", `{"path":"a.txt","max_bytes":-1}`, &out), pluginsdk.CodeInvalidArguments, "max_bytes")
	testkit.WantToolError(t, call(tk, "read_text", `{}`, &out), pluginsdk.CodeInvalidArguments, `missing required parameter "path"`)
}

func TestReadFileLimits(t *testing.T) {
	tk, root := setup(t)
	big := strings.Repeat("x", maxReadBytes+10)
	if err := os.WriteFile(filepath.Join(root, "big.txt"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	var out readFileOut
	if err := call(tk, "read_text", `{"path":"big.txt"}`, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Content) != defaultReadBytes || !out.Truncated || out.Size != int64(len(big)) {
		t.Errorf("default read: %d bytes, truncated %v, size %d", len(out.Content), out.Truncated, out.Size)
	}
	if err := call(tk, "read_text", `{"path":"big.txt","max_bytes":100000000}`, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Content) != maxReadBytes || !out.Truncated {
		t.Errorf("capped read: %d bytes, truncated %v", len(out.Content), out.Truncated)
	}
	// Truncation does not split a UTF-8 sequence.
	if err := os.WriteFile(filepath.Join(root, "utf8.txt"), []byte("aé"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := call(tk, "read_text", `{"path":"utf8.txt","max_bytes":2}`, &out); err != nil {
		t.Fatal(err)
	}
	if out.Content != "a" || !out.Truncated {
		t.Errorf("utf8 read = %+v, want content \"a\" truncated", out)
	}
}

func TestEscapesAreRefused(t *testing.T) {
	tk, root := setup(t)
	abs := filepath.Join(filepath.Dir(root), "outside", "secret.txt")
	paths := []string{
		"..", "../outside/secret.txt", "sub/../../outside/secret.txt", "./../x",
		"/etc/passwd", abs, root,
		"escape", "escape/secret.txt", "escfile", "abs",
	}
	for _, p := range paths {
		args, _ := json.Marshal(map[string]any{"path": p})
		want := fmt.Sprintf("path %q is outside the root", p)
		var out any
		testkit.WantToolError(t, call(tk, "read_text", string(args), &out), pluginsdk.CodeInvalidArguments, want)
		testkit.WantToolError(t, call(tk, "list_dir", string(args), &out), pluginsdk.CodeInvalidArguments, want)
		sargs, _ := json.Marshal(map[string]any{"path": p, "pattern": "secret"})
		testkit.WantToolError(t, call(tk, "search_text", string(sargs), &out), pluginsdk.CodeInvalidArguments, want)
	}
}

func TestSearch(t *testing.T) {
	tk, _ := setup(t)
	var out searchOut
	if err := call(tk, "search_text", `{"pattern":"hello"}`, &out); err != nil {
		t.Fatal(err)
	}
	want := []match{
		{Path: "a.txt", Line: 1, Text: "hello"},
		{Path: "a.txt", Line: 3, Text: "hello again"},
		{Path: "sub/b.txt", Line: 1, Text: "nested hello"},
	}
	// bin.dat (binary), .git, and the symlinks (inlink, and the secret
	// outside) are skipped.
	if !reflect.DeepEqual(out.Matches, want) || out.Truncated {
		t.Errorf("search hello = %+v (truncated %v), want %+v", out.Matches, out.Truncated, want)
	}

	if err := call(tk, "search_text", `{"pattern":"^h.*n$","regexp":true}`, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out.Matches, []match{{Path: "a.txt", Line: 3, Text: "hello again"}}) {
		t.Errorf("regexp search = %+v", out.Matches)
	}

	// Without regexp the pattern is literal.
	if err := call(tk, "search_text", `{"pattern":"^h.*n$"}`, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Matches) != 0 {
		t.Errorf("literal search = %+v, want none", out.Matches)
	}

	if err := call(tk, "search_text", `{"pattern":"hello","path":"sub"}`, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out.Matches, want[2:]) {
		t.Errorf("search in sub = %+v", out.Matches)
	}
	if err := call(tk, "search_text", `{"pattern":"hello","path":"a.txt"}`, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out.Matches, want[:2]) {
		t.Errorf("search in a.txt = %+v", out.Matches)
	}

	if err := call(tk, "search_text", `{"pattern":"hello","max_matches":2}`, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out.Matches, want[:2]) || !out.Truncated {
		t.Errorf("search max 2 = %+v (truncated %v)", out.Matches, out.Truncated)
	}
	// Exactly as many matches as allowed is not truncated.
	if err := call(tk, "search_text", `{"pattern":"hello","max_matches":3}`, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Matches) != 3 || out.Truncated {
		t.Errorf("search max 3 = %+v (truncated %v)", out.Matches, out.Truncated)
	}

	var e any
	testkit.WantToolError(t, call(tk, "search_text", `{"pattern":"("  ,"regexp":true}`, &e), pluginsdk.CodeInvalidArguments, "regular expression")
	testkit.WantToolError(t, call(tk, "search_text", `{"pattern":""}`, &e), pluginsdk.CodeInvalidArguments, "pattern must not be empty")
	testkit.WantToolError(t, call(tk, "search_text", `{"pattern":"x","max_matches":-1}`, &e), pluginsdk.CodeInvalidArguments, "max_matches")
	testkit.WantToolError(t, call(tk, "search_text", `{"pattern":"x","path":"nope"}`, &e), pluginsdk.CodeInvalidArguments, "does not exist")
}

func TestSearchCancelled(t *testing.T) {
	tk, _ := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := tk.CallJSON(ctx, "search_text", []byte(`{"pattern":"hello"}`))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestNewFilesToolMissingRoot(t *testing.T) {
	_, err := newFilesTool(filepath.Join(t.TempDir(), "missing"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want one wrapping os.ErrNotExist", err)
	}
}
