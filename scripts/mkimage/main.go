// Command mkimage builds the opentool-host container image without a
// container engine, with go-containerregistry: `make image` runs it from
// the repository root. See docs/container-image.md.
//
// It builds static binaries (CGO_ENABLED=0 GOOS=linux GOARCH=-arch,
// -trimpath, -ldflags '-s -w') of ./cmd/opentool-host and its small
// keeper program ./cmd/opentool-host-keeper, of its code runner
// ./cmd/opentool-host-coderunner (--code-mode), of every Go plugin folder plugins/NAME and of ./examples/mcp-notes, and
// puts them on an empty base (no download):
//
//	/usr/local/bin/opentool-host     entrypoint
//	/usr/local/bin/opentool-host-keeper  the host's keeper (beside the host, which runs it)
//	/usr/local/bin/opentool-host-coderunner  run_code's runner (beside the host, which starts it with --code-mode)
//	/plugins/opentool-plugin-NAME    each Go plugin, with plugins/NAME.policy.json where there is one
//	/plugins/notes.mcp.json          its command ../bin/mcp-notes is /bin/mcp-notes
//	/bin/mcp-notes
//	/etc/passwd, /etc/group          root and nonroot (65532), the image's user
//	/tmp (1777), /var/lib/opentool-host (65532, --state-dir), /etc/opentool-host, /data (working directory)
//
// Left out, since the image has no interpreter and no other programs: the
// Python and Node example plugins (opentool-plugin-pyecho, -nodeecho) and
// plugins/text.tools.json (runs wc, grep and date).
//
// It writes an OCI image layout (-layout, default bin/image) and a
// "docker save" tarball (-tar, default bin/opentool-host-image.tar,
// tagged -tag) and prints the digest and sizes. The same sources and
// toolchain give the same digest: every time in the image is
// SOURCE_DATE_EPOCH, or else the time of the last commit.
//
// Usage: go run ./scripts/mkimage [-layout DIR] [-tar FILE] [-tag NAME:TAG] [-version V] [-arch ARCH] [-go GO]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/opentool-host/opentool-host/process/keeper"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	layoutDir := fs.String("layout", "bin/image", "write the OCI image layout to `DIR` (\"\": none)")
	tarFile := fs.String("tar", "bin/opentool-host-image.tar", "write the docker-save tarball to `FILE` (\"\": none)")
	tag := fs.String("tag", "opentool-host:dev", "the image's `NAME:TAG` in the tarball and the layout")
	version := fs.String("version", "", "org.opencontainers.image.version (default: git describe, or \"dev\")")
	arch := fs.String("arch", runtime.GOARCH, "build the programs and the image for GOARCH `ARCH` (linux)")
	goCmd := fs.String("go", "go", "the go `COMMAND` that builds the programs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ref, err := name.NewTag(*tag)
	if err != nil {
		return err
	}
	if *version == "" {
		*version = gitOut("describe", "--tags", "--always", "--dirty")
		if *version == "" {
			*version = "dev"
		}
	}
	created, err := sourceDate()
	if err != nil {
		return err
	}
	binDir, err := os.MkdirTemp("", "mkimage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(binDir)
	files, err := Binaries(*goCmd, ".", binDir, *arch)
	if err != nil {
		return err
	}
	img, err := Build(Spec{Files: files, Arch: *arch, Version: *version, Revision: gitOut("rev-parse", "HEAD"), Created: created})
	if err != nil {
		return err
	}
	if *layoutDir != "" {
		if err := WriteLayout(*layoutDir, img, ref); err != nil {
			return err
		}
		fmt.Printf("wrote %s (OCI image layout, oci:%s:%s)\n", *layoutDir, *layoutDir, ref.TagStr())
	}
	if *tarFile != "" {
		if err := WriteTarball(*tarFile, img, ref); err != nil {
			return err
		}
		fmt.Printf("wrote %s (docker load / podman load, %s)\n", *tarFile, ref)
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	compressed, uncompressed, err := Sizes(img)
	if err != nil {
		return err
	}
	fmt.Printf("image %s  %s/%s  version %s\n", digest, "linux", *arch, *version)
	fmt.Printf("size  %.1f MiB compressed, %.1f MiB uncompressed\n", mib(compressed), mib(uncompressed))
	return nil
}

// codeRunner is the code runner's file name, the host's
// selfexec.CodeRunnerProgram, which it looks for beside itself.
const codeRunner = "opentool-host-coderunner"

// Binaries builds (with goCmd, for linux/arch) the static programs of the
// image from the module at root into binDir and returns the image's files: the host and its
// keeper program and code runner beside it, every Go
// plugin folder root/plugins/NAME with its NAME.policy.json where there is
// one, and the MCP server of plugins/notes.mcp.json.
func Binaries(goCmd, root, binDir, arch string) ([]File, error) {
	entries, err := os.ReadDir(filepath.Join(root, "plugins"))
	if err != nil {
		return nil, err
	}
	pkgs := []string{"./cmd/opentool-host", "./cmd/opentool-host-keeper", "./cmd/opentool-host-coderunner", "./examples/mcp-notes"}
	files := []File{
		{Path: HostPath, Src: filepath.Join(binDir, "opentool-host"), Exec: true},
		{Path: path.Join(path.Dir(HostPath), keeper.Program), Src: filepath.Join(binDir, keeper.Program), Exec: true},
		{Path: path.Join(path.Dir(HostPath), codeRunner), Src: filepath.Join(binDir, codeRunner), Exec: true},
		{Path: "/bin/mcp-notes", Src: filepath.Join(binDir, "mcp-notes"), Exec: true},
		{Path: PluginsDir + "/notes.mcp.json", Src: filepath.Join(root, "plugins", "notes.mcp.json")},
	}
	for _, e := range entries {
		if gofiles, _ := filepath.Glob(filepath.Join(root, "plugins", e.Name(), "*.go")); !e.IsDir() || len(gofiles) == 0 {
			continue
		}
		pkgs = append(pkgs, "./plugins/"+e.Name())
		files = append(files, File{Path: PluginsDir + "/opentool-plugin-" + e.Name(), Src: filepath.Join(binDir, e.Name()), Exec: true})
		if policy := filepath.Join(root, "plugins", e.Name()+".policy.json"); exists(policy) {
			files = append(files, File{Path: PluginsDir + "/" + e.Name() + ".policy.json", Src: policy})
		}
	}
	cmd := exec.Command(goCmd, append([]string{"build", "-trimpath", "-ldflags=-s -w", "-o", binDir + string(filepath.Separator)}, pkgs...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s: %w", strings.Join(pkgs, " "), err)
	}
	return files, nil
}

// sourceDate is SOURCE_DATE_EPOCH, or else the time of the last commit,
// or else the Unix epoch: the time of every entry of the image.
func sourceDate() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		s = gitOut("log", "-1", "--format=%ct")
	}
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// gitOut returns the trimmed output of git ARGS, or "" when git fails.
func gitOut(args ...string) string {
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
