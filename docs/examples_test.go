// Package docs_test runs the examples of README.md and docs/ against a real
// host, so that a page cannot show output the code no longer gives.
//
// The rules a page follows:
//   - A ```console block is a terminal session: each "$ curl ..." command
//     (continued over lines ending in "\") is sent to a host serving the
//     example plugins of plugins/ (built for the test), and the lines
//     after it, up to the next "$", must be what it prints. Sessions of
//     one page run in order against one fresh host, so state carries over
//     as the page says. Words after "console" on the fence line are flags
//     of that session's `opentool-host run` ("```console --tool-search"):
//     the page's sessions with the same flags share a host of their own.
//   - A ```go block that starts with "package main" must build.
//   - A ```json block whose fence names a declaration file ("```json
//     lines.tools.json") is that whole file: it is dropped into the
//     example host's plugins folder, so the page's console sessions call
//     its functions, and a snippet that is not a whole file fails them.
//   - Output that changes from run to run is compared loosely: the
//     host's address (shown as 127.0.0.1:9627) and the value of an OTC
//     "duration".
//
// Blocks that are not meant to run use another language tag (text, sh,
// json). The SDK READMEs (pluginsdk/python, pluginsdk/node) hold one
// block each, their whole plugin: sdkreadme_test.go checks it and the
// commands those pages give.
package docs_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/internal/strictjson"
	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/testkit"
)

// docAddr is the address the pages show; the test's host listens
// elsewhere and its address is written back as docAddr before comparing.
const docAddr = "127.0.0.1:9627"

// pages returns README.md and every Markdown file under docs/, relative to
// the repository root.
func pages(t *testing.T, root string) []string {
	t.Helper()
	out := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// block is one fenced code block of a page.
type block struct {
	lang string
	line int // of the opening fence, 1-based
	text string
}

// blocks returns the fenced code blocks of a Markdown page.
func blocks(md string) []block {
	var out []block
	var cur *block
	var body strings.Builder
	sc := bufio.NewScanner(strings.NewReader(md))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(l, "```"):
			cur = &block{lang: strings.TrimSpace(strings.TrimPrefix(l, "```")), line: n}
			body.Reset()
		case cur != nil && strings.TrimSpace(l) == "```":
			cur.text = body.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body.WriteString(l + "\n")
		}
	}
	return out
}

// step is one command of a console session and the output the page shows.
type step struct {
	line int
	cmd  string
	want string
}

// steps splits a console block into its commands and their output.
func steps(b block) []step {
	var out []step
	lines := strings.Split(strings.TrimRight(b.text, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "$ ") {
			continue
		}
		s := step{line: b.line + 1 + i, cmd: strings.TrimPrefix(lines[i], "$ ")}
		for strings.HasSuffix(s.cmd, "\\") && i+1 < len(lines) {
			i++
			s.cmd = strings.TrimSuffix(s.cmd, "\\") + " " + strings.TrimSpace(lines[i])
		}
		var want []string
		for i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "$ ") {
			i++
			want = append(want, lines[i])
		}
		s.want = strings.TrimSpace(strings.Join(want, "\n"))
		out = append(out, s)
	}
	return out
}

// words splits a command line as a POSIX shell would for the forms the
// pages use: single quotes, double quotes with \" \\ \$ escapes, and "|"
// as a word of its own.
func words(cmd string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in := false
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(cmd[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", cmd)
			}
			cur.WriteString(cmd[i+1 : i+1+j])
			i += j + 1
			in = true
		case c == '"':
			i++
			for ; i < len(cmd) && cmd[i] != '"'; i++ {
				if cmd[i] == '\\' && i+1 < len(cmd) && strings.IndexByte(`"\$`, cmd[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(cmd[i])
			}
			if i >= len(cmd) {
				return nil, fmt.Errorf("unterminated \" in %q", cmd)
			}
			in = true
		case c == ' ' || c == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		case c == '|':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
			out = append(out, "|")
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}

// curl runs the curl command of args (the flags the pages use: -s, -N,
// -H, -d, -X) against base (the host at addr), then a "| head -c N" when
// there is one, and returns what curl would print with the page's address
// in place of addr.
func curl(args []string, base, addr string) (string, error) {
	method, body, url := "", "", ""
	hdr := http.Header{}
	headBytes := -1
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-s" || a == "-N":
		case a == "-H" && i+1 < len(args):
			i++
			k, v, _ := strings.Cut(args[i], ":")
			hdr.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		case a == "-d" && i+1 < len(args):
			i++
			body = args[i]
		case a == "-X" && i+1 < len(args):
			i++
			method = args[i]
		case strings.HasPrefix(a, "-X"):
			method = a[2:]
		case a == "|":
			if i+3 >= len(args)+1 || args[i+1] != "head" || args[i+2] != "-c" {
				return "", fmt.Errorf("unsupported pipe %q", strings.Join(args[i:], " "))
			}
			n, err := strconv.Atoi(args[i+3])
			if err != nil {
				return "", err
			}
			headBytes = n
			i += 3
		case strings.HasPrefix(a, "-"):
			return "", fmt.Errorf("curl flag %s is not supported by the docs test", a)
		default:
			url = a
		}
	}
	if method == "" {
		method = "GET"
		if body != "" {
			method = "POST"
		}
	}
	if body != "" && hdr.Get("Content-Type") == "" {
		hdr.Set("Content-Type", "application/x-www-form-urlencoded") // curl's -d default
	}
	url = strings.Replace(url, "http://"+docAddr, base, 1)
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header = hdr
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	// head cuts what the page would show: the output with the page's
	// address in it.
	out = bytes.ReplaceAll(out, []byte(addr), []byte(docAddr))
	if headBytes >= 0 && len(out) > headBytes {
		out = out[:headBytes]
	}
	return string(out), nil
}

// durationRe matches an OTC result's duration, which differs every run.
var durationRe = regexp.MustCompile(`"duration":[0-9.e+-]+`)

// normalize makes output comparable: the host's address as the pages
// show it, durations blanked, surrounding space trimmed.
func normalize(s, addr string) string {
	s = strings.ReplaceAll(s, addr, docAddr)
	s = durationRe.ReplaceAllString(s, `"duration":N`)
	return strings.TrimSpace(s)
}

// exampleHost is a host process serving the example plugins.
type exampleHost struct {
	url  string
	addr string
}

// startExampleHost builds the host and the example plugins of plugins/
// (mock, calculator, files, the notes MCP server and the text tools) into
// a fresh folder, starts `opentool-host run` on it with the flags extra
// and waits until every plugin is ready.
func startExampleHost(t *testing.T, extra ...string) *exampleHost {
	t.Helper()
	root := testkit.RepoRoot(t)
	dir := t.TempDir()
	for _, p := range []string{"mock", "calculator", "files"} {
		testkit.InstallPlugin(t, dir, p, "./plugins/"+p)
	}
	notes := testkit.Build(t, "./examples/mcp-notes")
	decl := fmt.Sprintf(`{"mcpServers":{"notes":{"command":%q,"args":[]}}}`, notes)
	if err := os.WriteFile(filepath.Join(dir, "notes.mcp.json"), []byte(decl), 0o644); err != nil {
		t.Fatal(err)
	}
	testkit.CopyFile(t, filepath.Join(root, "plugins", "text.tools.json"), filepath.Join(dir, "text.tools.json"), 0o644)
	for name, body := range pageDeclarations(t, root) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	addr := testkit.FreeAddr(t)
	logs := &testkit.SyncBuffer{}
	args := append([]string{"run", "--dir", dir, "--addr", addr, "--state-dir", t.TempDir(), "--drain-delay", "0", "--watch=false"}, extra...)
	cmd := exec.Command(testkit.Build(t, "./cmd/opentool-host"), args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("host log:\n%s", logs.String())
		}
	})
	h := &exampleHost{url: "http://" + addr, addr: addr}
	testkit.Eventually(t, 60*time.Second, "example host ready", func() bool {
		select {
		case <-done:
			t.Fatalf("host exited:\n%s", logs.String())
		default:
		}
		resp, err := http.Get(h.url + "/health?ready=1")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return h
}

// pageDeclarations returns the declaration files the pages show whole
// (a ```json block whose fence names NAME.tools.json), by file name.
// Two pages showing different files under one name fail the test.
func pageDeclarations(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, page := range pages(t, root) {
		md, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks(string(md)) {
			f := strings.Fields(b.lang)
			if len(f) != 2 || f[0] != "json" || !strings.HasSuffix(f[1], decl.ToolsSuffix) {
				continue
			}
			if prev, ok := out[f[1]]; ok && prev != b.text {
				t.Fatalf("%s:%d: %s is shown twice, differently", page, b.line, f[1])
			}
			out[f[1]] = b.text
		}
	}
	return out
}

// TestConsoleExamples runs every console session of every page.
func TestConsoleExamples(t *testing.T) {
	root := testkit.RepoRoot(t)
	ran := 0
	for _, page := range pages(t, root) {
		md, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		type session struct {
			flags string // of the host, after "console" on the fence line
			steps []step
		}
		var sessions []session
		for _, b := range blocks(string(md)) {
			if lang, flags, _ := strings.Cut(b.lang, " "); lang == "console" {
				sessions = append(sessions, session{strings.TrimSpace(flags), steps(b)})
			}
		}
		if len(sessions) == 0 {
			continue
		}
		t.Run(strings.ReplaceAll(page, "/", "_"), func(t *testing.T) {
			hosts := map[string]*exampleHost{}
			for _, sess := range sessions {
				h := hosts[sess.flags]
				if h == nil {
					h = startExampleHost(t, strings.Fields(sess.flags)...)
					hosts[sess.flags] = h
				}
				for _, s := range sess.steps {
					args, err := words(s.cmd)
					if err != nil {
						t.Fatalf("%s:%d: %v", page, s.line, err)
					}
					if len(args) == 0 || args[0] != "curl" {
						t.Fatalf("%s:%d: only curl commands can run in a console block; use another tag for %q", page, s.line, s.cmd)
					}
					got, err := curl(args, h.url, h.addr)
					if err != nil {
						t.Fatalf("%s:%d: %v", page, s.line, err)
					}
					ran++
					if g, w := normalize(got, h.addr), normalize(s.want, h.addr); g != w {
						t.Errorf("%s:%d: %s\n got: %s\nwant: %s", page, s.line, s.cmd, g, w)
					}
				}
			}
		})
	}
	if ran == 0 {
		t.Fatal("no console example found: the pages lost their examples, or the parser broke")
	}
}

// TestGoExamplesBuild builds every Go main package shown in a page, and
// runs README's plugin as a plugin of a real host: its function must
// answer as the page says it does.
func TestGoExamplesBuild(t *testing.T) {
	root := testkit.RepoRoot(t)
	tmpRoot := filepath.Join(root, "docs", "testdata")
	if err := os.MkdirAll(tmpRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	built := 0
	var readmePlugin string
	for _, page := range pages(t, root) {
		md, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks(string(md)) {
			if b.lang != "go" || !strings.HasPrefix(b.text, "package main") {
				continue
			}
			dir, err := os.MkdirTemp(tmpRoot, "gocheck-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(b.text), 0o644); err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(root, dir)
			bin := filepath.Join(t.TempDir(), "opentool-plugin-example")
			cmd := exec.Command("go", "build", "-o", bin, "./"+filepath.ToSlash(rel))
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s:%d: the Go example does not build: %v\n%s", page, b.line, err, out)
				continue
			}
			built++
			if page == "README.md" && readmePlugin == "" {
				readmePlugin = bin
			}
		}
	}
	if built == 0 {
		t.Fatal("no Go example found")
	}
	if readmePlugin == "" {
		t.Fatal("README.md shows no Go plugin")
	}
	// The plugin in a folder of its own, called once through the CLI.
	dir := t.TempDir()
	testkit.CopyFile(t, readmePlugin, filepath.Join(dir, "opentool-plugin-greeter"), 0o755)
	cmd := exec.Command(testkit.Build(t, "./cmd/opentool-host"), "call", "--dir", dir, "--state-dir", t.TempDir(), "greet", "--params", `{"name":"Ada"}`)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("call greet: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte(`"greeting":"Hello, Ada!"`)) && !bytes.Contains(out, []byte(`"greeting": "Hello, Ada!"`)) {
		t.Fatalf("greet answered %s", out)
	}
}

// linkRe matches a Markdown link's target: [text](target).
var linkRe = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// headingRe matches a Markdown heading.
var headingRe = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)

// anchor returns GitHub's anchor of a heading: lower case, punctuation
// other than "-" and "_" dropped, spaces as "-".
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestLinksResolve checks every relative link of README.md and docs/: the
// file exists, and a #fragment names a heading of it.
func TestLinksResolve(t *testing.T) {
	root := testkit.RepoRoot(t)
	checked := 0
	for _, page := range pages(t, root) {
		md, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		// Code blocks hold no links.
		text := string(md)
		for _, b := range blocks(text) {
			text = strings.Replace(text, b.text, "", 1)
		}
		for _, m := range linkRe.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := filepath.Join(root, page)
			if file != "" {
				path = filepath.Join(filepath.Dir(path), file)
			}
			checked++
			body, err := os.ReadFile(path)
			if err != nil {
				if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
					continue
				}
				t.Errorf("%s: link %s: %v", page, target, err)
				continue
			}
			if frag == "" {
				continue
			}
			found := false
			for _, h := range headingRe.FindAllStringSubmatch(string(body), -1) {
				if anchor(h[1]) == frag {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s: link %s: no heading with anchor #%s in %s", page, target, frag, file)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found")
	}
}

// TestDesktopConfigExamples reads each JSON block of the "Desktop client
// configs" section of reference/declarations.md that is an MCP config
// (it has a server list) as the host reads it, as Claude Desktop's file:
// the file must read as a whole, and each entry's fault must be on the
// page as /health gives it, so that the page cannot show a fault the
// host no longer reports, nor leave out one it does.
func TestDesktopConfigExamples(t *testing.T) {
	root := testkit.RepoRoot(t)
	md, err := os.ReadFile(filepath.Join(root, "docs", "reference", "declarations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(md), "\n## Desktop client configs\n")
	if !ok {
		t.Fatal("declarations.md has no section \"Desktop client configs\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	configs := 0
	for _, b := range blocks(section) {
		if b.lang != "json" || !strings.Contains(b.text, `"mcpServers"`) && !strings.Contains(b.text, `"servers"`) {
			continue
		}
		configs++
		cfg, err := decl.ParseDesktop([]byte(b.text))
		if err != nil {
			t.Errorf("declarations.md example at section line %d: %v", b.line, err)
			continue
		}
		for _, e := range cfg.Entries {
			if e.Fault == nil || e.Disabled {
				continue
			}
			shown := fmt.Sprintf(`{"name": %q, "state": "failed", "last_error": %q}`, e.Name, "declaration "+strictjson.InFile("claude_desktop_config.json", e.Fault).Error())
			if !strings.Contains(section, shown) {
				t.Errorf("declarations.md does not show the fault of entry %s as /health gives it:\n%s", e.Key, shown)
			}
		}
	}
	if configs == 0 {
		t.Fatal("no desktop config example found")
	}
}

// TestOneDesktopConfig: every page that shows a desktop client how to
// start the host (a JSON block naming "opentool-host" under mcpServers)
// shows the same block, so that no two pages give different paths.
func TestOneDesktopConfig(t *testing.T) {
	root := testkit.RepoRoot(t)
	shown := map[string]string{} // block → first page:line showing it
	for _, page := range pages(t, root) {
		md, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks(string(md)) {
			if b.lang == "json" && strings.Contains(b.text, `"mcpServers"`) && strings.Contains(b.text, `"opentool-host": {`) &&
				strings.Contains(b.text, `"mcp"`) {
				if _, ok := shown[b.text]; !ok {
					shown[b.text] = fmt.Sprintf("%s:%d", page, b.line)
				}
			}
		}
	}
	if len(shown) != 1 {
		t.Errorf("%d different desktop configs of the host: %v", len(shown), shown)
	}
}
