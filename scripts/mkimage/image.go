package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's fixed layout.
const (
	// UID and GID are the image's user and group, "nonroot" (as in
	// distroless): the host and every plugin run as them.
	UID, GID = 65532, 65532
	// HostPath is the host binary, the image's entrypoint.
	HostPath = "/usr/local/bin/opentool-host"
	// PluginsDir is the plugins folder the default command serves (--dir).
	PluginsDir = "/plugins"
	// StateDir is the host's state folder (--state-dir: copies of the
	// plugin binaries it runs), owned by UID; mount a writable, executable
	// volume here when the root filesystem is read-only.
	StateDir = "/var/lib/opentool-host"
	// KeysDir is where an API keys file is expected to be mounted
	// (--api-keys-file /etc/opentool-host/keys.json); the image holds none.
	KeysDir = "/etc/opentool-host"
	// WorkDir is the working directory of the host and so of every
	// plugin: the folder the files plugin serves (mount files here).
	WorkDir = "/data"
	// Port is the port the default command listens on.
	Port = 9627
	// Source is the org.opencontainers.image.source label.
	Source = "https://github.com/opentool-host/opentool-host"
	// DrainDelay is the default command's --drain-delay: long enough for
	// Kubernetes endpoints and kube-proxy (or a load balancer polling
	// readiness every second or two) to drop the container before it
	// stops listening (the host's own default is 0: stop at once).
	DrainDelay = "5s"
)

// Cmd is the image's default command, the arguments of the entrypoint
// HostPath. It listens beyond loopback, so the host refuses to start
// without API keys: give OPENTOOL_API_KEYS or OPENTOOL_API_KEYS_FILE (or
// replace the command and add --api-keys-file). On SIGTERM it drains
// for DrainDelay.
var Cmd = []string{"run", "--dir", PluginsDir, "--addr", fmt.Sprintf("0.0.0.0:%d", Port), "--state-dir", StateDir, "--drain-delay", DrainDelay}

// File is one file of the image's application layer, copied from Src.
type File struct {
	Path string // absolute path in the image
	Src  string // the file on disk
	// Exec marks a program: mode 0755, and it must be a static ELF
	// executable (no program interpreter), since the image has no libc.
	// Other files get mode 0644. Every file is owned by root, so the
	// image's user cannot change them.
	Exec bool
}

// Spec is what Build puts into the image.
type Spec struct {
	Files    []File
	Arch     string    // GOARCH of the programs, e.g. amd64
	Version  string    // org.opencontainers.image.version
	Revision string    // org.opencontainers.image.revision; "" leaves it out
	Created  time.Time // the config's time and every layer entry's mtime
}

// entry is one file or folder of a layer.
type entry struct {
	path     string // absolute
	mode     int64  // permission bits (and the sticky bit)
	uid, gid int
	dir      bool
	data     []byte
}

// Build returns the image of spec on an empty base: a base layer (users,
// /tmp, the state and plugins folders) and an application layer (the
// files of spec). Every entry's time is spec.Created and entries are
// sorted, so the same spec and files give the same digest.
func Build(spec Spec) (v1.Image, error) {
	if spec.Arch == "" || spec.Version == "" {
		return nil, errors.New("mkimage: spec needs Arch and Version")
	}
	app := make([]entry, 0, len(spec.Files))
	for _, f := range spec.Files {
		data, err := os.ReadFile(f.Src)
		if err != nil {
			return nil, err
		}
		mode := int64(0o644)
		if f.Exec {
			if err := checkStatic(f.Src); err != nil {
				return nil, err
			}
			mode = 0o755
		}
		app = append(app, entry{path: f.Path, mode: mode, data: data})
	}
	base, err := layer(baseEntries(), spec.Created)
	if err != nil {
		return nil, err
	}
	appLayer, err := layer(app, spec.Created)
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: spec.Created.UTC()}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: created, CreatedBy: "make image: base (users, /tmp, " + StateDir + ")"}},
		mutate.Addendum{Layer: appLayer, History: v1.History{Created: created, CreatedBy: "make image: opentool-host and the Go example plugins"}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Created = spec.Arch, "linux", created
	labels := map[string]string{
		"org.opencontainers.image.title":       "opentool-host",
		"org.opencontainers.image.description": "One tool server for LLM agents (OpenTool, OTC, MCP), built from drop-in plugin executables",
		"org.opencontainers.image.source":      Source,
		"org.opencontainers.image.version":     spec.Version,
		"org.opencontainers.image.created":     created.Format(time.RFC3339),
	}
	if spec.Revision != "" {
		labels["org.opencontainers.image.revision"] = spec.Revision
	}
	cf.Config = v1.Config{
		User:         fmt.Sprintf("%d:%d", UID, GID),
		Entrypoint:   []string{HostPath},
		Cmd:          append([]string(nil), Cmd...),
		Env:          []string{"PATH=/usr/local/bin:/bin", "TMPDIR=/tmp"},
		ExposedPorts: map[string]struct{}{fmt.Sprintf("%d/tcp", Port): {}},
		WorkingDir:   WorkDir,
		Labels:       labels,
		StopSignal:   "SIGTERM",
	}
	return mutate.ConfigFile(img, cf)
}

// baseEntries is what a static Go program needs of an operating system:
// the users, a /tmp, and the folders the host uses.
func baseEntries() []entry {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, GID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", GID)
	return []entry{
		{path: "/etc/passwd", mode: 0o644, data: []byte(passwd)},
		{path: "/etc/group", mode: 0o644, data: []byte(group)},
		{path: "/root", mode: 0o700, dir: true},
		{path: "/home/nonroot", mode: 0o700, uid: UID, gid: GID, dir: true},
		{path: "/tmp", mode: 0o1777, dir: true},
		{path: StateDir, mode: 0o755, uid: UID, gid: GID, dir: true},
		{path: KeysDir, mode: 0o755, dir: true},
		{path: PluginsDir, mode: 0o755, dir: true},
		{path: WorkDir, mode: 0o755, dir: true},
	}
}

// layer returns the gzip-compressed OCI layer of entries, with the
// missing parent folders (0755, root), in path order, every mtime t.
func layer(entries []entry, t time.Time) (v1.Layer, error) {
	byPath := map[string]entry{}
	for _, e := range entries {
		if !path.IsAbs(e.path) || path.Clean(e.path) != e.path || e.path == "/" {
			return nil, fmt.Errorf("mkimage: bad image path %q", e.path)
		}
		if _, dup := byPath[e.path]; dup {
			return nil, fmt.Errorf("mkimage: %s given twice", e.path)
		}
		byPath[e.path] = e
	}
	for _, e := range entries {
		for d := path.Dir(e.path); d != "/"; d = path.Dir(d) {
			if _, ok := byPath[d]; !ok {
				byPath[d] = entry{path: d, mode: 0o755, dir: true}
			}
		}
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(t.Unix(), 0)
	for _, p := range paths {
		e := byPath[p]
		h := &tar.Header{Name: strings.TrimPrefix(p, "/"), Mode: e.mode, Uid: e.uid, Gid: e.gid, ModTime: mtime, Typeflag: tar.TypeReg, Size: int64(len(e.data))}
		if e.dir {
			h.Name, h.Typeflag, h.Size = h.Name+"/", tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.DefaultCompression), tarball.WithCompressedCaching)
}

// checkStatic returns an error unless file is an ELF executable without a
// program interpreter (PT_INTERP), i.e. one that runs with no libc.
func checkStatic(file string) error {
	f, err := elf.Open(file)
	if err != nil {
		return fmt.Errorf("mkimage: %s: %w", file, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("mkimage: %s is dynamically linked (build it with CGO_ENABLED=0)", file)
		}
	}
	return nil
}

// Sizes returns the image's compressed size (manifest, config and the
// gzip layers, as a registry stores it) and its uncompressed size (the
// layers' tar streams, about what it takes unpacked).
func Sizes(img v1.Image) (compressed, uncompressed int64, err error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, 0, err
	}
	raw, err := img.RawManifest()
	if err != nil {
		return 0, 0, err
	}
	compressed = int64(len(raw)) + m.Config.Size
	layers, err := img.Layers()
	if err != nil {
		return 0, 0, err
	}
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			return 0, 0, err
		}
		compressed += n
		rc, err := l.Uncompressed()
		if err != nil {
			return 0, 0, err
		}
		u, err := io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return 0, 0, err
		}
		uncompressed += u
	}
	return compressed, uncompressed, nil
}

// WriteLayout writes img as the only image of an OCI image layout at dir,
// annotated with ref's tag (org.opencontainers.image.ref.name, so that
// "oci:DIR:TAG" names it). An existing dir must be an image layout (it
// holds oci-layout) and is replaced.
func WriteLayout(dir string, img v1.Image, ref name.Tag) error {
	if _, err := os.Stat(dir); err == nil {
		if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
			return fmt.Errorf("mkimage: %s exists and is not an OCI image layout; not replacing it", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	// The descriptor is written out rather than taken from mutate's index,
	// which would add an artifactType (the config's media type) that
	// marks an artifact, not an image.
	desc, err := partial.Descriptor(img)
	if err != nil {
		return err
	}
	desc.ArtifactType = ""
	desc.Annotations = map[string]string{"org.opencontainers.image.ref.name": ref.TagStr()}
	l, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := l.WriteImage(img); err != nil {
		return err
	}
	return l.AppendDescriptor(*desc)
}

// WriteTarball writes img as a "docker save" tarball named ref at file
// (through a temp file and a rename), for docker load, podman load and
// kind load image-archive.
func WriteTarball(file string, img v1.Image, ref name.Tag) error {
	tmp := file + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, file)
}
