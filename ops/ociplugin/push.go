package ociplugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/file"

	"github.com/opentool-host/opentool-host/protocol/decl"
)

// PushOptions tunes Push.
type PushOptions struct {
	// Platform is the binary's platform ("GOOS/GOARCH" or PlatformAny)
	// when its header does not tell (ErrUnknownFormat); a header that
	// does must agree with it.
	Platform string
	// MaxLayerBytes refuses a binary larger than this, so that what is
	// pushed is what Fetch takes with the same limit. Default
	// DefaultMaxLayerBytes.
	MaxLayerBytes int64
	// Created is the manifest's org.opencontainers.image.created
	// (RFC 3339); "" is now. A fixed value makes the manifest
	// reproducible.
	Created string
}

// Push packs p as a plugin artifact and pushes it to dst, tagged tag
// (oras.PackManifest into a file store, then oras.Copy). Each file is
// first copied to a private snapshot, so that what is checked is what is
// pushed: a declaration or policy must parse as the host parses it (and
// be at most decl.MaxFileBytes), a binary must be at most
// opts.MaxLayerBytes and be an executable whose platform its header
// tells (BinaryPlatform) or opts.Platform says. It sets each
// file's Size and SHA256 and p.Platform, and returns the manifest's
// descriptor. Errors: those, a file that cannot be read, or the
// registry's (wrapped).
func Push(ctx context.Context, dst oras.Target, tag string, p *Plugin, opts PushOptions) (ocispec.Descriptor, error) {
	if tag == "" {
		return ocispec.Descriptor{}, fmt.Errorf("push: no tag to push to")
	}
	if err := p.check(); err != nil {
		return ocispec.Descriptor{}, err
	}
	if opts.MaxLayerBytes <= 0 {
		opts.MaxLayerBytes = DefaultMaxLayerBytes
	}
	if opts.Platform != "" && !validPlatform(opts.Platform) {
		return ocispec.Descriptor{}, fmt.Errorf("platform %q: want GOOS/GOARCH (linux/amd64) or %q", opts.Platform, PlatformAny)
	}
	tmp, err := os.MkdirTemp("", "opentool-push-")
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	defer os.RemoveAll(tmp)
	store, err := file.New(tmp)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	defer store.Close()

	annotations := map[string]string{AnnotationName: p.Name}
	if opts.Created != "" {
		annotations[ocispec.AnnotationCreated] = opts.Created
	}
	layers := make([]ocispec.Descriptor, 0, len(p.Files))
	for i := range p.Files {
		f := &p.Files[i]
		ki := kindOf(f.Kind)
		snap := filepath.Join(tmp, f.Name)
		limit := int64(decl.MaxFileBytes)
		if ki.check == nil {
			limit = opts.MaxLayerBytes
		}
		if err := snapshot(f, snap, limit); err != nil {
			return ocispec.Descriptor{}, err
		}
		extra := map[string]string{}
		if ki.check != nil {
			data, err := os.ReadFile(snap)
			if err != nil {
				return ocispec.Descriptor{}, err
			}
			if err := ki.check(data); err != nil {
				return ocispec.Descriptor{}, fmt.Errorf("%s: %w", f.Path, err)
			}
		} else {
			fi, err := os.Stat(f.Path)
			if err != nil {
				return ocispec.Descriptor{}, err
			}
			if p.Platform, err = binaryPlatform(snap, opts.Platform); err != nil {
				return ocispec.Descriptor{}, err
			}
			extra[AnnotationMode] = fmt.Sprintf("%04o", fi.Mode().Perm())
			extra[AnnotationPlatform] = p.Platform
			annotations[AnnotationPlatform] = p.Platform
		}
		desc, err := store.Add(ctx, f.Name, ki.mediaType, snap)
		if err != nil {
			return ocispec.Descriptor{}, err
		}
		for k, v := range extra {
			desc.Annotations[k] = v
		}
		layers = append(layers, desc)
	}
	manifest, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, ArtifactType, oras.PackManifestOptions{
		Layers:              layers,
		ManifestAnnotations: annotations,
	})
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("pack manifest: %w", err)
	}
	if err := store.Tag(ctx, manifest, tag); err != nil {
		return ocispec.Descriptor{}, err
	}
	if _, err := oras.Copy(ctx, store, tag, dst, tag, oras.DefaultCopyOptions); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("push: %w", err)
	}
	return manifest, nil
}

// binaryPlatform returns the platform of the binary at path: its
// header's, which must be want unless want is ""; want when the header
// does not tell. Errors: they disagree, or neither tells.
func binaryPlatform(path, want string) (string, error) {
	plat, err := BinaryPlatform(path)
	switch {
	case errors.Is(err, ErrUnknownFormat) && want != "":
		return want, nil
	case err != nil:
		return "", fmt.Errorf("%w (give the platform to push it anyway)", err)
	case want != "" && want != plat:
		return "", fmt.Errorf("%s: its header says %s, not %s", path, plat, want)
	}
	return plat, nil
}

// snapshot copies f.Path to dst (at most limit bytes) and sets f.Size
// and f.SHA256. Errors: the file cannot be read or is larger than limit.
func snapshot(f *File, dst string, limit int64) error {
	in, err := os.Open(f.Path)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(in, limit+1))
	if err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	if n > limit {
		return fmt.Errorf("%s: larger than %d bytes, the most a %s file may be", f.Path, limit, f.Kind)
	}
	f.Size, f.SHA256 = n, hex.EncodeToString(h.Sum(nil))
	return out.Close()
}
