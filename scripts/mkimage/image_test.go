package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/opentool-host/opentool-host/testkit"
)

// created is the time of the test images.
var created = time.Unix(1700000000, 0).UTC()

// TestBuildSmall checks the builder on small files, without go build:
// the same spec gives the same digest, another time another one, and a
// dynamically linked program or a bad path is refused.
func TestBuildSmall(t *testing.T) {
	dir := t.TempDir()
	decl := filepath.Join(dir, "x.policy.json")
	if err := os.WriteFile(decl, []byte(`{"timeout_ms":1000}`), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := Spec{Files: []File{{Path: "/plugins/x.policy.json", Src: decl}}, Arch: "amd64", Version: "test", Created: created}
	d1, d2 := digest(t, spec), digest(t, spec)
	if d1 != d2 {
		t.Fatalf("two builds of one spec: %s and %s", d1, d2)
	}
	later := spec
	later.Created = created.Add(time.Second)
	if d3 := digest(t, later); d3 == d1 {
		t.Errorf("another time gave the same digest %s", d3)
	}

	bad := spec
	bad.Files = []File{{Path: "plugins/x", Src: decl}}
	if _, err := Build(bad); err == nil {
		t.Error("a relative image path was accepted")
	}
	bad.Files = []File{{Path: "/p/x", Src: decl}, {Path: "/p/x", Src: decl}}
	if _, err := Build(bad); err == nil {
		t.Error("a path given twice was accepted")
	}
	bad.Files = []File{{Path: "/p/x", Src: decl, Exec: true}}
	if _, err := Build(bad); err == nil {
		t.Error("a program that is not ELF was accepted")
	}
	// A dynamically linked program: a -race test binary links libc, and so
	// does the system's true.
	exe, _ := os.Executable()
	candidates := []string{exe, "/bin/true", "/usr/bin/true"}
	if i := slices.IndexFunc(candidates, isDynamic); i >= 0 {
		bad.Files = []File{{Path: "/p/x", Src: candidates[i], Exec: true}}
		if _, err := Build(bad); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
			t.Errorf("a dynamically linked program: %v", err)
		}
	} else {
		t.Log("no dynamically linked program here to check the refusal with")
	}
}

// TestImage builds the real image as make image does: it runs the mkimage
// command (built without -race, which would make gzip ten times slower)
// twice and gets the same digest, reads the layout and the tarball back,
// checks the config and every file, and runs the host from the unpacked
// root filesystem: --help, the default command refusing to serve without
// API keys, and serving the image's plugins with a key.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the host and every Go plugin (go build); not with -short")
	}
	root := testkit.RepoRoot(t)
	out := t.TempDir()
	mkimage := filepath.Join(out, "mkimage")
	build := exec.Command("go", "build", "-o", mkimage, "./scripts/mkimage")
	build.Dir = root
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./scripts/mkimage: %v\n%s", err, b)
	}
	var digests [2]v1.Hash
	for i := range digests {
		start := time.Now()
		dir := filepath.Join(out, fmt.Sprint(i))
		cmd := exec.Command(mkimage, "-layout", filepath.Join(dir, "image"), "-tar", filepath.Join(dir, "image.tar"), "-tag", "opentool-host:test", "-version", "test")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), fmt.Sprintf("SOURCE_DATE_EPOCH=%d", created.Unix()))
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("mkimage: %v\n%s", err, b)
		}
		t.Logf("mkimage (%v):\n%s", time.Since(start).Round(time.Millisecond), b)
		idx, err := layout.ImageIndexFromPath(filepath.Join(dir, "image"))
		if err != nil {
			t.Fatal(err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(im.Manifests) != 1 || im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "test" || im.Manifests[0].ArtifactType != "" {
			t.Fatalf("index.json: %+v, want one image named test", im.Manifests)
		}
		digests[i] = im.Manifests[0].Digest
		if !strings.Contains(string(b), digests[i].String()) {
			t.Errorf("mkimage did not print the digest %s", digests[i])
		}
	}
	if digests[0] != digests[1] {
		t.Fatalf("reproducible: two builds gave %s and %s", digests[0], digests[1])
	}
	want := digests[0]
	layoutDir, tarFile := filepath.Join(out, "0", "image"), filepath.Join(out, "0", "image.tar")
	idx, err := layout.ImageIndexFromPath(layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := idx.Image(want)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(got, validate.Fast); err != nil {
		t.Errorf("the layout's image: %v", err)
	}
	// The tarball holds the same config and layers under its tag.
	ref, err := name.NewTag("opentool-host:test")
	if err != nil {
		t.Fatal(err)
	}
	timg, err := tarball.ImageFromPath(tarFile, &ref)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := configName(t, got), configName(t, timg); a != b {
		t.Errorf("tarball config %s, layout config %s", b, a)
	}
	if a, b := layerDigests(t, got), layerDigests(t, timg); !slices.Equal(a, b) {
		t.Errorf("tarball layers %v, layout layers %v", b, a)
	}
	if err := WriteLayout(tarFile, got, ref); err == nil {
		t.Error("WriteLayout replaced a file that is not an image layout")
	}

	checkConfig(t, got)
	rootfs := t.TempDir()
	checkFiles(t, got, root, rootfs)
	hostBin := filepath.Join(rootfs, strings.TrimPrefix(HostPath, "/"))

	t.Run("help", func(t *testing.T) {
		out, err := exec.Command(hostBin, "run", "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--api-keys-file") {
			t.Fatalf("opentool-host run --help: %v\n%s", err, out)
		}
	})
	// args is the image's command with its paths inside rootfs and addr.
	args := func(addr string) []string {
		a := slices.Clone(Cmd)
		for i := range a {
			switch a[i] {
			case PluginsDir:
				a[i] = filepath.Join(rootfs, PluginsDir)
			case StateDir:
				a[i] = filepath.Join(t.TempDir(), "state")
			case "0.0.0.0:9627":
				a[i] = addr
			}
		}
		return append(a, "--drain-delay", "0s")
	}
	t.Run("keys-required", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, hostBin, args("0.0.0.0:0")...)
		cmd.Dir, cmd.Env = filepath.Join(rootfs, WorkDir), hostEnv()
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "without API keys") {
			t.Fatalf("the default command without keys: %v, want exit status 2 naming the missing keys\n%s", err, out)
		}
	})
	t.Run("serves", func(t *testing.T) { serve(t, hostBin, rootfs, args) })
}

// serve runs the unpacked host with a key on loopback and calls every
// plugin of the image.
func serve(t *testing.T, hostBin, rootfs string, args func(string) []string) {
	addr := testkit.FreeAddr(t)
	var logs bytes.Buffer
	cmd := exec.Command(hostBin, args(addr)...)
	cmd.Dir, cmd.Env = filepath.Join(rootfs, WorkDir), append(hostEnv(), "OPENTOOL_API_KEYS=image-test-key")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("the host did not stop on SIGINT within 20 s")
		}
		if t.Failed() {
			t.Logf("host output:\n%s", logs.String())
		}
	}()
	base := "http://" + addr
	status := func(path, key, body string) (int, string) {
		method := http.MethodGet
		var rd io.Reader
		if body != "" {
			method, rd = http.MethodPost, strings.NewReader(body)
		}
		req, err := http.NewRequest(method, base+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	testkit.Eventually(t, 30*time.Second, "GET /health?ready=1 answers 200", func() bool {
		code, _ := status("/health?ready=1", "", "")
		return code == http.StatusOK
	})
	const key = "image-test-key"
	if code, body := status("/health", key, ""); code != http.StatusOK || strings.Contains(body, `"failed"`) {
		t.Errorf("GET /health: %d %s", code, body)
	}
	// One call to each plugin: calculator, mock, files (its root is the
	// working directory /data, empty) and the MCP server of notes.mcp.json.
	calls := []struct{ body, want string }{
		{`{"jsonrpc":"2.0","method":"add","params":{"a":1.5,"b":2},"id":"1"}`, `"result":{"result":3.5}`},
		{`{"jsonrpc":"2.0","method":"create","params":{"text":"Hi"},"id":"2"}`, `"result":{"id":`},
		{`{"jsonrpc":"2.0","method":"list_dir","params":{"path":"."},"id":"3"}`, `"entries":[]`},
		{`{"jsonrpc":"2.0","method":"add_note","params":{"title":"from the image"},"id":"4"}`, `"title":"from the image"`},
	}
	for _, c := range calls {
		if code, body := status("/opentool/call", key, c.body); code != http.StatusOK || !strings.Contains(body, c.want) {
			t.Errorf("POST /opentool/call %s: %d %s, want %s", c.body, code, body, c.want)
		}
	}
	if code, _ := status("/opentool/call", "", calls[0].body); code != http.StatusUnauthorized {
		t.Errorf("a call without the key: %d, want 401", code)
	}
}

// checkConfig checks the image's config: non-root user, entrypoint and
// command, port, working directory, labels.
func checkConfig(t *testing.T, img v1.Image) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if c.User != "65532:65532" {
		t.Errorf("User %q, want 65532:65532", c.User)
	}
	if !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/opentool-host"}) {
		t.Errorf("Entrypoint %q", c.Entrypoint)
	}
	wantCmd := []string{"run", "--dir", "/plugins", "--addr", "0.0.0.0:9627", "--state-dir", "/var/lib/opentool-host", "--drain-delay", "5s"}
	if !slices.Equal(c.Cmd, wantCmd) {
		t.Errorf("Cmd %q, want %q", c.Cmd, wantCmd)
	}
	if _, ok := c.ExposedPorts["9627/tcp"]; !ok || len(c.ExposedPorts) != 1 {
		t.Errorf("ExposedPorts %v", c.ExposedPorts)
	}
	if c.WorkingDir != "/data" {
		t.Errorf("WorkingDir %q", c.WorkingDir)
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.source":  Source,
		"org.opencontainers.image.version": "test",
		"org.opencontainers.image.created": "2023-11-14T22:13:20Z",
	} {
		if c.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
		}
	}
	if len(c.Labels["org.opencontainers.image.revision"]) != 40 {
		t.Errorf("label org.opencontainers.image.revision = %q, want the commit", c.Labels["org.opencontainers.image.revision"])
	}
	for _, e := range c.Env {
		if strings.Contains(e, "API_KEY") {
			t.Errorf("the image sets %s: keys must come from the deployment", e)
		}
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH || !cf.Created.Time.Equal(created) {
		t.Errorf("os %q architecture %q created %v", cf.OS, cf.Architecture, cf.Created)
	}
}

// checkFiles checks every entry of the image's flattened filesystem
// (mutate.Extract) against what the image must hold, checks that every
// program is a static ELF executable, and unpacks the files into rootfs
// (without owners).
func checkFiles(t *testing.T, img v1.Image, repo, rootfs string) {
	t.Helper()
	type want struct {
		mode     os.FileMode
		uid, gid int
	}
	const prog, data = 0o755, 0o644
	wants := map[string]want{
		"etc/passwd":                             {data, 0, 0},
		"etc/group":                              {data, 0, 0},
		"tmp":                                    {os.ModeDir | os.ModeSticky | 0o777, 0, 0},
		"var/lib/opentool-host":                  {os.ModeDir | 0o755, UID, GID},
		"home/nonroot":                           {os.ModeDir | 0o700, UID, GID},
		"etc/opentool-host":                      {os.ModeDir | 0o755, 0, 0},
		"plugins":                                {os.ModeDir | 0o755, 0, 0},
		"data":                                   {os.ModeDir | 0o755, 0, 0},
		"usr/local/bin/opentool-host":            {prog, 0, 0},
		"usr/local/bin/opentool-host-keeper":     {prog, 0, 0},
		"usr/local/bin/opentool-host-coderunner": {prog, 0, 0},
		"bin/mcp-notes":                          {prog, 0, 0},
		"plugins/notes.mcp.json":                 {data, 0, 0},
		"plugins/files.policy.json":              {data, 0, 0},
	}
	// Every Go plugin folder (the Makefile's PLUGINS) is in the image.
	dirs, err := os.ReadDir(filepath.Join(repo, "plugins"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if d.IsDir() {
			wants["plugins/opentool-plugin-"+d.Name()] = want{prog, 0, 0}
		}
	}
	if len(wants) < 15 {
		t.Fatalf("expected at least the calculator, files and mock plugins: %v", wants)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	seen := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := strings.TrimSuffix(h.Name, "/")
		seen[p] = true
		mode := h.FileInfo().Mode()
		if w, ok := wants[p]; ok && (mode != w.mode || h.Uid != w.uid || h.Gid != w.gid) {
			t.Errorf("%s: %v %d:%d, want %v %d:%d", p, mode, h.Uid, h.Gid, w.mode, w.uid, w.gid)
		}
		if !h.ModTime.Equal(created) {
			t.Errorf("%s: mtime %v, want %v", p, h.ModTime, created)
		}
		dst := filepath.Join(rootfs, filepath.FromSlash(p))
		switch h.Typeflag {
		case tar.TypeDir:
			if _, ok := wants[p]; !ok && p != "root" && (mode != os.ModeDir|0o755 || h.Uid != 0 || h.Gid != 0) {
				t.Errorf("%s: %v %d:%d, want a parent folder (drwxr-xr-x 0:0)", p, mode, h.Uid, h.Gid)
			}
			if err := os.MkdirAll(dst, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if _, ok := wants[p]; !ok {
				t.Errorf("unexpected file %s in the image", p)
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, mode.Perm()); err != nil {
				t.Fatal(err)
			}
			if mode&0o111 != 0 {
				if err := checkStatic(dst); err != nil {
					t.Error(err)
				}
			}
		default:
			t.Errorf("%s: unexpected type %c", p, h.Typeflag)
		}
	}
	for p := range wants {
		if !seen[p] {
			t.Errorf("%s is not in the image", p)
		}
	}
	passwd, _ := os.ReadFile(filepath.Join(rootfs, "etc", "passwd"))
	if !strings.Contains(string(passwd), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no nonroot user:\n%s", passwd)
	}
	// notes.mcp.json's command, relative to /plugins, is in the image.
	mcp, _ := os.ReadFile(filepath.Join(rootfs, "plugins", "notes.mcp.json"))
	if !strings.Contains(string(mcp), `"../bin/mcp-notes"`) || !seen[path.Clean(path.Join("plugins", "../bin/mcp-notes"))] {
		t.Errorf("notes.mcp.json does not run /bin/mcp-notes:\n%s", mcp)
	}
}

// hostEnv is the test's environment without OPENTOOL_* variables.
func hostEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "OPENTOOL_") })
}

func digest(t *testing.T, spec Spec) v1.Hash {
	t.Helper()
	img, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func configName(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	h, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func layerDigests(t *testing.T, img v1.Image) []v1.Hash {
	t.Helper()
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var out []v1.Hash
	for _, l := range ls {
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// isDynamic reports whether file is an ELF executable with a program
// interpreter.
func isDynamic(file string) bool { return checkStatic(file) != nil && isELF(file) }

func isELF(file string) bool {
	b := make([]byte, 4)
	f, err := os.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	_, err = io.ReadFull(f, b)
	return err == nil && string(b) == "\x7fELF"
}
