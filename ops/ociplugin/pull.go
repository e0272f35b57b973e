package ociplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"

	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/protocol/lockfile"
)

// PullOptions tunes Fetch.
type PullOptions struct {
	// MaxLayerBytes refuses an artifact with a layer larger than this
	// (declarations and policies: at most decl.MaxFileBytes too).
	// Default DefaultMaxLayerBytes.
	MaxLayerBytes int64
	// Platform is the "GOOS/GOARCH" a binary must be built for; ""
	// is HostPlatform(). A script (PlatformAny) runs anywhere.
	Platform string
}

// Pulled is an artifact fetched and verified into a staging folder
// inside the plugins directory (".opentool-pull-*", which the host
// ignores: a dot name, and not watched), ready to Install or Discard.
type Pulled struct {
	// Plugin is the artifact's plugin; its Files' Paths are in the
	// staging folder until Install, in the plugins directory after.
	Plugin
	// Manifest is the descriptor of the artifact's manifest (its
	// digest names the artifact whatever its tag points to later).
	Manifest ocispec.Descriptor

	dir, stage string
}

// Fetch fetches the plugin artifact ref from src (a tag or digest of a
// repository, e.g. a *remote.Repository), checks it (see the package
// documentation), and writes its files into a new staging folder inside
// dir (made if missing), each verified against its layer's size and
// digest while it is read, synced, 0755 for the binary and 0644 for the
// others. Errors: ref cannot be fetched; an error wrapping ErrRefused
// for an artifact that is not a well-formed plugin artifact for
// opts.Platform. On error nothing is left in dir.
func Fetch(ctx context.Context, src oras.ReadOnlyTarget, ref, dir string, opts PullOptions) (*Pulled, error) {
	if opts.MaxLayerBytes <= 0 {
		opts.MaxLayerBytes = DefaultMaxLayerBytes
	}
	if opts.Platform == "" {
		opts.Platform = HostPlatform()
	}
	if !validPlatform(opts.Platform) || opts.Platform == PlatformAny {
		return nil, fmt.Errorf("platform %q: want GOOS/GOARCH (linux/amd64)", opts.Platform)
	}
	mdesc, data, err := oras.FetchBytes(ctx, src, ref, oras.FetchBytesOptions{MaxBytes: maxManifestBytes})
	if err != nil {
		return nil, fmt.Errorf("fetch manifest of %s: %w", ref, err)
	}
	if mdesc.MediaType != ocispec.MediaTypeImageManifest {
		return nil, refused("%s is a %s, not an OCI image manifest of artifactType %s", ref, mdesc.MediaType, ArtifactType)
	}
	var mf ocispec.Manifest
	if err := json.Unmarshal(data, &mf); err != nil {
		return nil, refused("manifest of %s: %v", ref, err)
	}
	p, layers, err := checkManifest(&mf, opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	stage, err := os.MkdirTemp(dir, ".opentool-pull-")
	if err != nil {
		return nil, err
	}
	pulled := &Pulled{Plugin: *p, Manifest: mdesc, dir: dir, stage: stage}
	if err := pulled.fetchFiles(ctx, src, layers); err != nil {
		pulled.Discard()
		return nil, err
	}
	return pulled, nil
}

// checkManifest checks mf before anything is downloaded: the artifact
// type, the plugin name, the number of layers, each layer's media type,
// title, size and digest algorithm, the rules of Plugin.check, and the
// binary's annotated platform against opts.Platform. It returns the
// plugin (Paths unset) and the layers, both in install order.
func checkManifest(mf *ocispec.Manifest, opts PullOptions) (*Plugin, []ocispec.Descriptor, error) {
	if mf.ArtifactType != ArtifactType {
		return nil, nil, refused("artifactType %q is not %s (pushed by opentool-host push?)", mf.ArtifactType, ArtifactType)
	}
	name := mf.Annotations[AnnotationName]
	if !validName(name) {
		return nil, nil, refused("annotation %s: %q is not a plugin name", AnnotationName, name)
	}
	switch n := len(mf.Layers); {
	case n == 0:
		return nil, nil, refused("no layers")
	case n > MaxLayers:
		return nil, nil, refused("%d layers, more than the %d a plugin artifact has (one per kind)", n, MaxLayers)
	}
	p := &Plugin{Name: name}
	byKind := map[Kind]ocispec.Descriptor{}
	for i, l := range mf.Layers {
		title := l.Annotations[ocispec.AnnotationTitle]
		ki, ok := kindInfo{}, false
		for _, k := range kinds {
			if k.mediaType == l.MediaType {
				ki, ok = k, true
			}
		}
		if !ok {
			return nil, nil, refused("layer %d (%q): media type %q is not one of a plugin artifact", i, title, l.MediaType)
		}
		limit := int64(decl.MaxFileBytes)
		if ki.check == nil {
			limit = opts.MaxLayerBytes
		}
		switch want := ki.file(name); {
		case strings.ContainsAny(title, `/\`) || strings.Contains(title, ".."):
			return nil, nil, refused("layer %d: title %q is a path; a file name is allowed, %q", i, title, want)
		case title != want:
			return nil, nil, refused("layer %d: title %q is not %q, the %s file of plugin %s", i, title, want, ki.kind, name)
		case byKind[ki.kind].MediaType != "":
			return nil, nil, refused("layer %d: a second %s file (%s)", i, ki.kind, title)
		case l.Size < 0 || l.Size > limit:
			return nil, nil, refused("layer %d (%s): %d bytes, more than the limit of %d", i, title, l.Size, limit)
		case l.Digest.Validate() != nil || l.Digest.Algorithm() != digest.SHA256:
			return nil, nil, refused("layer %d (%s): digest %q is not sha256:HEX", i, title, l.Digest)
		}
		byKind[ki.kind] = l
		p.Files = append(p.Files, File{Kind: ki.kind, Name: title, Size: l.Size, SHA256: l.Digest.Encoded()})
	}
	p.sort()
	if err := p.check(); err != nil {
		return nil, nil, refused("%w", err)
	}
	layers := make([]ocispec.Descriptor, len(p.Files))
	for i, f := range p.Files {
		layers[i] = byKind[f.Kind]
	}
	if p.File(KindBinary) != nil {
		p.Platform = mf.Annotations[AnnotationPlatform]
		switch {
		case !validPlatform(p.Platform):
			return nil, nil, refused("annotation %s: %q is not GOOS/GOARCH", AnnotationPlatform, p.Platform)
		case p.Platform != PlatformAny && p.Platform != opts.Platform:
			return nil, nil, refused("plugin %s is built for %s, not %s", name, p.Platform, opts.Platform)
		}
	}
	return p, layers, nil
}

// fetchFiles downloads layers (p.Files' order) into the staging
// folder, then checks the content: the declarations and policy parse,
// the binary's header says its annotated platform.
func (p *Pulled) fetchFiles(ctx context.Context, src oras.ReadOnlyTarget, layers []ocispec.Descriptor) error {
	for i, l := range layers {
		f := &p.Files[i]
		f.Path = filepath.Join(p.stage, f.Name)
		ki := kindOf(f.Kind)
		mode := os.FileMode(0o644)
		if ki.check == nil {
			mode = 0o755
		}
		if err := fetchLayer(ctx, src, l, f.Path, mode); err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		if ki.check != nil {
			data, err := os.ReadFile(f.Path)
			if err != nil {
				return err
			}
			if err := ki.check(data); err != nil {
				return refused("%s: %w", f.Name, err)
			}
			continue
		}
		switch plat, err := BinaryPlatform(f.Path); {
		case err != nil:
			return refused("%s: %w", f.Name, err)
		case plat != p.Platform:
			return refused("%s: its header says %s, the artifact says %s", f.Name, plat, p.Platform)
		}
	}
	return nil
}

// fetchLayer writes the blob of l to the new file path through a reader
// that verifies l's size and digest, syncs it and sets mode. Errors:
// the fetch failed, or (wrapping ErrRefused) the bytes are not the ones
// l names.
func fetchLayer(ctx context.Context, src oras.ReadOnlyTarget, l ocispec.Descriptor, path string, mode os.FileMode) error {
	rc, err := src.Fetch(ctx, l)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", l.Digest, err)
	}
	defer rc.Close()
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	vr := content.NewVerifyReader(rc, l)
	if _, err = io.Copy(out, vr); err == nil {
		err = vr.Verify()
	}
	switch {
	case errors.Is(err, content.ErrMismatchedDigest), errors.Is(err, content.ErrTrailingData), errors.Is(err, io.ErrUnexpectedEOF):
		return refused("content is not %s (%d bytes): %w", l.Digest, l.Size, err)
	case err != nil:
		return fmt.Errorf("fetch %s: %w", l.Digest, err)
	}
	if err := out.Chmod(mode); err != nil {
		return err
	}
	if err := out.Sync(); err != nil {
		return err
	}
	return out.Close()
}

// StageDir returns the staging folder holding the verified files until
// Install.
func (p *Pulled) StageDir() string { return p.stage }

// Sources returns where each file came from, for the lock file of the
// plugins directory (lockfile.File.SetSource): its base name → ref (the
// reference pulled, REGISTRY/REPOSITORY:TAG or REGISTRY/REPOSITORY@DIGEST),
// the manifest's digest and the file's sha256.
func (p *Pulled) Sources(ref string) map[string]lockfile.Source {
	out := make(map[string]lockfile.Source, len(p.Files))
	for _, f := range p.Files {
		out[f.Name] = lockfile.Source{Ref: ref, Manifest: p.Manifest.Digest.String(), SHA256: f.SHA256}
	}
	return out
}

// Install moves the staged files into the plugins directory, each with
// one rename (a reader sees the old file or the new one, never part of
// one), in install order: the policy before the declarations before the
// binary, so that when a running host acts on the binary (it debounces
// each path, core.Config.SettleTime) the plugin's other files are in
// place already, and a new binary never runs under an old policy. It
// then syncs the directory and removes the staging folder; the Files'
// Paths are in the directory. Errors: a rename or the sync failed (the
// files moved before it stay installed; the error names them).
func (p *Pulled) Install() error {
	var moved []string
	for i := range p.Files {
		f := &p.Files[i]
		dst := filepath.Join(p.dir, f.Name)
		if err := os.Rename(f.Path, dst); err != nil {
			return fmt.Errorf("install %s (installed before it: %v): %w", f.Name, moved, err)
		}
		f.Path = dst
		moved = append(moved, f.Name)
	}
	p.Discard()
	d, err := os.Open(p.dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Discard removes the staging folder and what is left in it; safe to
// defer (after Install it has nothing left to do).
func (p *Pulled) Discard() {
	if p.stage != "" {
		_ = os.RemoveAll(p.stage)
		p.stage = ""
	}
}
