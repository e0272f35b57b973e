package ociplugin_test

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/opentool-host/opentool-host/ops/ociplugin"
	"github.com/opentool-host/opentool-host/testkit"
)

// startRegistry serves an in-memory OCI registry on 127.0.0.1 until the
// test ends, through wrap when given, and returns its host:port.
func startRegistry(t *testing.T, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	var h http.Handler = registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// repository is the plain-HTTP repository ref ("HOST/NAME:TAG").
func repository(t *testing.T, ref string) *remote.Repository {
	t.Helper()
	repo, err := remote.NewRepository(ref)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	return repo
}

// calculatorDir returns a folder holding the calculator plugin binary
// and a policy file for it.
func calculatorDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	writeFile(t, filepath.Join(dir, "calculator.policy.json"), `{"timeout_ms": 5000, "max_concurrency": 4}`, 0o644)
	return dir
}

func writeFile(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

// pushDir pushes plugin name of dir to ref.
func pushDir(t *testing.T, ref, dir, name string, opts ociplugin.PushOptions) ocispec.Descriptor {
	t.Helper()
	p, err := ociplugin.FromDir(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	repo := repository(t, ref)
	desc, err := ociplugin.Push(context.Background(), repo, repo.Reference.Reference, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	return desc
}

// fetch pulls ref into dir.
func fetch(t *testing.T, ref, dir string, opts ociplugin.PullOptions) (*ociplugin.Pulled, error) {
	t.Helper()
	repo := repository(t, ref)
	return ociplugin.Fetch(context.Background(), repo, repo.Reference.Reference, dir, opts)
}

// entries lists dir's names.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// TestPushPullRoundTrip pushes the calculator plugin with its policy and
// pulls it into an empty folder: the files are byte-identical, the
// binary executable, the manifest the pushed one, no staging left.
func TestPushPullRoundTrip(t *testing.T) {
	reg := startRegistry(t, nil)
	src := calculatorDir(t)
	ref := reg + "/plugins/calculator:1.0"
	pushed := pushDir(t, ref, src, "calculator", ociplugin.PushOptions{})

	dst := filepath.Join(t.TempDir(), "plugins") // made by Fetch
	start := time.Now()
	p, err := fetch(t, ref, dst, ociplugin.PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Install(); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	if p.Manifest.Digest != pushed.Digest || p.Name != "calculator" || p.Platform != ociplugin.HostPlatform() {
		t.Errorf("pulled %s %s %s, pushed %s", p.Manifest.Digest, p.Name, p.Platform, pushed.Digest)
	}
	if got := strings.Join(entries(t, dst), " "); got != "calculator.policy.json opentool-plugin-calculator" {
		t.Errorf("dir holds %s", got)
	}
	for _, f := range []struct {
		name string
		mode os.FileMode
	}{{"opentool-plugin-calculator", 0o755}, {"calculator.policy.json", 0o644}} {
		want, _ := os.ReadFile(filepath.Join(src, f.name))
		got, err := os.ReadFile(filepath.Join(dst, f.name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, want %d identical (%v)", f.name, len(got), len(want), err)
		}
		if fi, _ := os.Stat(filepath.Join(dst, f.name)); fi == nil || fi.Mode().Perm() != f.mode {
			t.Errorf("%s: mode %v, want %v", f.name, fi.Mode(), f.mode)
		}
	}
	bin := p.File(ociplugin.KindBinary)
	if sum, _ := fileSHA256(filepath.Join(dst, bin.Name)); bin.SHA256 != sum || bin.Path != filepath.Join(dst, bin.Name) {
		t.Errorf("binary %+v, sha256 %s", bin, sum)
	}
	t.Logf("pulled %s (%.1f MiB) in %v", bin.Name, float64(bin.Size)/(1<<20), elapsed)
}

// fileSHA256 is the hex sha256 of a file.
func fileSHA256(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return content.NewDescriptorFromBytes("", data).Digest.Encoded(), nil
}

// rawLayer is a layer of a hand-made artifact.
type rawLayer struct {
	mediaType, title string
	data             []byte
	sizeDelta        int64 // added to the descriptor's size
}

// pushRaw pushes a hand-made manifest (none of Push's checks) to ref.
func pushRaw(t *testing.T, ref, artifactType string, annotations map[string]string, layers []rawLayer) {
	t.Helper()
	ctx := context.Background()
	repo := repository(t, ref)
	var descs []ocispec.Descriptor
	for _, l := range layers {
		desc := content.NewDescriptorFromBytes(l.mediaType, l.data)
		if err := repo.Push(ctx, desc, bytes.NewReader(l.data)); err != nil && !strings.Contains(err.Error(), "exists") {
			t.Fatal(err)
		}
		desc.Size += l.sizeDelta
		desc.Annotations = map[string]string{ocispec.AnnotationTitle: l.title}
		descs = append(descs, desc)
	}
	m, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, artifactType, oras.PackManifestOptions{Layers: descs, ManifestAnnotations: annotations})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Tag(ctx, m, repo.Reference.Reference); err != nil {
		t.Fatal(err)
	}
}

// armELF returns a minimal ELF header of a linux/arm64 executable.
func armELF() []byte {
	h := elf.Header64{Type: uint16(elf.ET_EXEC), Machine: uint16(elf.EM_AARCH64), Version: uint32(elf.EV_CURRENT), Ehsize: 64, Phentsize: 56, Shentsize: 64}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS], h.Ident[elf.EI_DATA], h.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	var b bytes.Buffer
	_ = binary.Write(&b, binary.LittleEndian, h)
	return b.Bytes()
}

// TestPullRefusesHostileArtifacts pulls hand-made artifacts that break a
// rule each: every one is refused with a clear error and nothing is
// written.
func TestPullRefusesHostileArtifacts(t *testing.T) {
	reg := startRegistry(t, nil)
	calc, err := os.ReadFile(testkit.Build(t, "./plugins/calculator"))
	if err != nil {
		t.Fatal(err)
	}
	here := ociplugin.HostPlatform()
	ann := func(name, platform string) map[string]string {
		return map[string]string{ociplugin.AnnotationName: name, ociplugin.AnnotationPlatform: platform}
	}
	bin := func(title string, data []byte) rawLayer {
		return rawLayer{mediaType: ociplugin.MediaTypeBinary, title: title, data: data}
	}
	policy := rawLayer{mediaType: ociplugin.MediaTypePolicy, title: "x.policy.json", data: []byte(`{"timeout_ms": 1000}`)}
	script := []byte("#!/bin/sh\necho hi\n")
	cases := []struct {
		name, artifactType string
		annotations        map[string]string
		layers             []rawLayer
		maxLayer           int64
		want               string
	}{
		{"artifact type", "application/vnd.example.other.v1", ann("x", here), []rawLayer{bin("opentool-plugin-x", script)}, 0, `artifactType "application/vnd.example.other.v1"`},
		{"dot-dot title", "", ann("x", here), []rawLayer{bin("../opentool-plugin-x", script)}, 0, `title "../opentool-plugin-x" is a path`},
		{"slash title", "", ann("x", here), []rawLayer{bin("sub/opentool-plugin-x", script)}, 0, `title "sub/opentool-plugin-x" is a path`},
		{"absolute title", "", ann("x", here), []rawLayer{bin("/usr/bin/opentool-plugin-x", script)}, 0, "is a path"},
		{"other name", "", ann("x", here), []rawLayer{bin("evil.sh", script)}, 0, `title "evil.sh" is not "opentool-plugin-x"`},
		{"other plugin", "", ann("x", here), []rawLayer{bin("opentool-plugin-y", script)}, 0, `title "opentool-plugin-y" is not "opentool-plugin-x"`},
		{"title of another kind", "", ann("x", here), []rawLayer{bin("x.tools.json", script)}, 0, `is not "opentool-plugin-x"`},
		{"bad name", "", ann("../x", here), []rawLayer{bin("opentool-plugin-x", script)}, 0, `"../x" is not a plugin name`},
		{"unknown media type", "", ann("x", here), []rawLayer{{mediaType: "application/octet-stream", title: "opentool-plugin-x", data: script}}, 0, `media type "application/octet-stream"`},
		{"too many layers", "", ann("x", here), []rawLayer{policy, policy, policy, policy, bin("opentool-plugin-x", script)}, 0, "5 layers, more than the 4"},
		{"kind twice", "", ann("x", here), []rawLayer{policy, policy, bin("opentool-plugin-x", script)}, 0, "a second policy file"},
		{"too large", "", ann("x", here), []rawLayer{bin("opentool-plugin-x", calc)}, 1 << 20, "more than the limit of 1048576"},
		{"nothing to run", "", ann("x", here), []rawLayer{policy}, 0, "nothing to run"},
		{"binary and tools", "", ann("x", here), []rawLayer{bin("opentool-plugin-x", script), {mediaType: ociplugin.MediaTypeTools, title: "x.tools.json", data: []byte(`{}`)}}, 0, "would both be plugin x"},
		{"no platform", "", map[string]string{ociplugin.AnnotationName: "x"}, []rawLayer{bin("opentool-plugin-x", script)}, 0, `"" is not GOOS/GOARCH`},
		{"wrong architecture", "", ann("x", "linux/arm64"), []rawLayer{bin("opentool-plugin-x", armELF())}, 0, "built for linux/arm64, not " + here},
		{"platform annotation lies", "", ann("x", here), []rawLayer{bin("opentool-plugin-x", armELF())}, 0, "its header says linux/arm64, the artifact says " + here},
		{"script says a platform", "", ann("x", here), []rawLayer{bin("opentool-plugin-x", script)}, 0, "its header says any"},
		{"not an executable", "", ann("x", ociplugin.PlatformAny), []rawLayer{bin("opentool-plugin-x", []byte("MZ nonsense"))}, 0, "opentool-plugin-x:"},
		{"invalid policy", "", ann("x", here), []rawLayer{{mediaType: ociplugin.MediaTypePolicy, title: "x.policy.json", data: []byte(`{"frob": 1}`)}, bin("opentool-plugin-x", calc)}, 0, "x.policy.json: 1:2: $.frob"},
		// oras-go compares the Content-Length with the descriptor's size
		// (the verifying reader does for a registry that sends none:
		// TestPullRefusesTamperedBlob).
		{"size understated", "", ann("x", here), []rawLayer{{mediaType: ociplugin.MediaTypeBinary, title: "opentool-plugin-x", data: calc, sizeDelta: -1}}, 0, "mismatch Content-Length"},
		{"size overstated", "", ann("x", here), []rawLayer{{mediaType: ociplugin.MediaTypeBinary, title: "opentool-plugin-x", data: calc, sizeDelta: 1}}, 0, "mismatch Content-Length"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ref := reg + "/hostile/case:" + string(rune('a'+i))
			if c.artifactType == "" {
				c.artifactType = ociplugin.ArtifactType
			}
			pushRaw(t, ref, c.artifactType, c.annotations, c.layers)
			dir := t.TempDir()
			_, err := fetch(t, ref, dir, ociplugin.PullOptions{MaxLayerBytes: c.maxLayer})
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ociplugin.ErrRefused) && !strings.Contains(c.want, "Content-Length") {
				t.Fatalf("err = %v, want ErrRefused saying %q", err, c.want)
			}
			if got := entries(t, dir); len(got) != 0 {
				t.Errorf("refused pull left %v", got)
			}
		})
	}
}

// TestPullRefusesTamperedBlob serves the calculator binary with one
// byte changed (same size), then with a byte appended and no
// Content-Length: each pull is refused (digest, trailing data) and
// writes nothing; an untampered pull of the same artifact works.
func TestPullRefusesTamperedBlob(t *testing.T) {
	var target string                   // "/blobs/sha256:..." of the binary
	var tamper func(body []byte) []byte // what the registry does to it
	reg := startRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if target == "" || r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, target) {
				h.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			body := tamper(rec.Body.Bytes())
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			if len(body) != rec.Body.Len() {
				w.Header().Del("Content-Length") // sent chunked
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(body)
		})
	})
	ref := reg + "/plugins/calculator:1.0"
	pushDir(t, ref, calculatorDir(t), "calculator", ociplugin.PushOptions{})
	sum, err := fileSHA256(testkit.Build(t, "./plugins/calculator"))
	if err != nil {
		t.Fatal(err)
	}
	target = "/blobs/sha256:" + sum
	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		tamper func([]byte) []byte
		want   error
	}{
		{"flipped byte", func(b []byte) []byte { b[len(b)/2] ^= 0xff; return b }, content.ErrMismatchedDigest},
		{"appended byte", func(b []byte) []byte { return append(b, 0) }, content.ErrTrailingData},
	} {
		tamper = c.tamper
		_, err = fetch(t, ref, dir, ociplugin.PullOptions{})
		if !errors.Is(err, ociplugin.ErrRefused) || !errors.Is(err, c.want) {
			t.Fatalf("%s: err = %v, want a refusal for %v", c.name, err, c.want)
		}
		t.Logf("%s: %v", c.name, err)
		if got := entries(t, dir); len(got) != 0 {
			t.Errorf("%s: tampered pull left %v", c.name, got)
		}
	}
	target = ""
	p, err := fetch(t, ref, dir, ociplugin.PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Discard()
}

// TestWrongArchitecture pushes a linux/arm64 executable (its platform
// read from its ELF header): a pull for this machine refuses it, a pull
// for linux/arm64 takes it.
func TestWrongArchitecture(t *testing.T) {
	if ociplugin.HostPlatform() == "linux/arm64" {
		t.Skip("this machine is linux/arm64")
	}
	reg := startRegistry(t, nil)
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "opentool-plugin-arm"), string(armELF()), 0o755)
	ref := reg + "/plugins/arm:1"
	pushDir(t, ref, src, "arm", ociplugin.PushOptions{})
	dir := t.TempDir()
	if _, err := fetch(t, ref, dir, ociplugin.PullOptions{}); !errors.Is(err, ociplugin.ErrRefused) || !strings.Contains(err.Error(), "plugin arm is built for linux/arm64, not "+ociplugin.HostPlatform()) {
		t.Fatalf("err = %v", err)
	}
	p, err := fetch(t, ref, dir, ociplugin.PullOptions{Platform: "linux/arm64"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Discard()
	if p.Platform != "linux/arm64" {
		t.Errorf("platform %s", p.Platform)
	}
}

// TestPushRefusals: files that make no plugin artifact are refused
// before anything is pushed.
func TestPushRefusals(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"opentool-plugin-a": "#!/bin/sh\n", "b.policy.json": `{}`, "a.tools.json": `{}`,
		"notes.txt": "x", "opentool-plugin-c": "not an executable", "c.mcp.json": `{"frob":1}`,
	} {
		writeFile(t, filepath.Join(dir, name), data, 0o755)
	}
	in := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, filepath.Join(dir, n))
		}
		return out
	}
	for _, c := range []struct {
		files []string
		want  string
	}{
		{in("notes.txt"), "not a plugin file"},
		{in("opentool-plugin-a", "b.policy.json"), "one artifact holds one plugin"},
		{in("opentool-plugin-a", "a.tools.json"), "would both be plugin a"},
		{in("b.policy.json"), "nothing to run"},
	} {
		if _, err := ociplugin.FromPaths(c.files); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("FromPaths(%v) = %v, want %q", c.files, err, c.want)
		}
	}
	if _, err := ociplugin.FromDir(dir, "../a"); err == nil {
		t.Error("FromDir with a path for a name worked")
	}
	reg := startRegistry(t, nil)
	for _, c := range []struct {
		name, want string
	}{
		{"c", "c.mcp.json: 1:1: has no server list"}, // the invalid c.mcp.json
	} {
		p, err := ociplugin.FromDir(dir, c.name)
		if err != nil {
			t.Fatal(err)
		}
		repo := repository(t, reg+"/p/"+c.name+":1")
		if _, err := ociplugin.Push(context.Background(), repo, "1", p, ociplugin.PushOptions{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Push(%s) = %v, want %q", c.name, err, c.want)
		}
	}
	p, err := ociplugin.FromPaths(in("opentool-plugin-c"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ociplugin.Push(context.Background(), repository(t, reg+"/p/c2:1"), "1", p, ociplugin.PushOptions{}); !errors.Is(err, ociplugin.ErrUnknownFormat) {
		t.Errorf("Push of a non-executable = %v, want ErrUnknownFormat", err)
	}
}

// TestBinaryPlatform reads platforms from headers.
func TestBinaryPlatform(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "arm"), string(armELF()), 0o755)
	writeFile(t, filepath.Join(dir, "sh"), "#!/bin/sh\n", 0o755)
	writeFile(t, filepath.Join(dir, "txt"), "hello", 0o644)
	for path, want := range map[string]string{
		testkit.Build(t, "./plugins/calculator"): ociplugin.HostPlatform(),
		filepath.Join(dir, "arm"):                "linux/arm64",
		filepath.Join(dir, "sh"):                 ociplugin.PlatformAny,
	} {
		if got, err := ociplugin.BinaryPlatform(path); got != want || err != nil {
			t.Errorf("BinaryPlatform(%s) = %q, %v; want %q", path, got, err, want)
		}
	}
	if _, err := ociplugin.BinaryPlatform(filepath.Join(dir, "txt")); !errors.Is(err, ociplugin.ErrUnknownFormat) {
		t.Errorf("text file: %v", err)
	}
}
