package ociplugin

import (
	"bytes"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
)

// PlatformAny is the platform of a plugin that is a script ("#!" first
// line): it runs wherever its interpreter does.
const PlatformAny = "any"

// HostPlatform returns the platform of this process, "GOOS/GOARCH"
// ("linux/amd64"): what Pull requires by default.
func HostPlatform() string { return runtime.GOOS + "/" + runtime.GOARCH }

// ErrUnknownFormat is wrapped by BinaryPlatform's error for a file that
// is neither an ELF, Mach-O or PE executable nor a "#!" script.
var ErrUnknownFormat = errors.New("not an ELF, Mach-O or PE executable or a #! script")

// BinaryPlatform returns the platform the executable at path is built
// for, in Go's terms "GOOS/GOARCH", read from its header: ELF (GOOS
// "linux" unless the header's OS ABI names FreeBSD, NetBSD, OpenBSD or
// Solaris), Mach-O ("darwin"; a universal binary is refused), PE
// ("windows"); PlatformAny for a "#!" script. Errors: the file cannot
// be read, or ErrUnknownFormat (also for a machine Go does not build
// for).
func BinaryPlatform(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	magic := make([]byte, 4)
	if _, err := io.ReadFull(f, magic); err != nil {
		return "", fmt.Errorf("%s: %w", path, ErrUnknownFormat)
	}
	var plat string
	switch {
	case bytes.HasPrefix(magic, []byte("#!")):
		return PlatformAny, nil
	case bytes.Equal(magic, []byte(elf.ELFMAG)):
		plat, err = elfPlatform(f)
	case bytes.Equal(magic, []byte{0xca, 0xfe, 0xba, 0xbe}):
		return "", fmt.Errorf("%s: a Mach-O universal binary; push one artifact per architecture", path)
	case isMachO(magic):
		plat, err = machoPlatform(f)
	case bytes.HasPrefix(magic, []byte("MZ")):
		plat, err = pePlatform(f)
	default:
		err = ErrUnknownFormat
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return plat, nil
}

// elfPlatform maps an ELF header to GOOS/GOARCH.
func elfPlatform(r io.ReaderAt) (string, error) {
	f, err := elf.NewFile(r)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnknownFormat, err)
	}
	goos := map[elf.OSABI]string{
		elf.ELFOSABI_FREEBSD: "freebsd",
		elf.ELFOSABI_NETBSD:  "netbsd",
		elf.ELFOSABI_OPENBSD: "openbsd",
		elf.ELFOSABI_SOLARIS: "solaris",
	}[f.OSABI]
	if goos == "" {
		goos = "linux"
	}
	le := f.ByteOrder.String() == "LittleEndian"
	is64 := f.Class == elf.ELFCLASS64
	var arch string
	switch f.Machine {
	case elf.EM_X86_64:
		arch = "amd64"
	case elf.EM_386:
		arch = "386"
	case elf.EM_AARCH64:
		arch = "arm64"
	case elf.EM_ARM:
		arch = "arm"
	case elf.EM_RISCV:
		if is64 {
			arch = "riscv64"
		}
	case elf.EM_PPC64:
		arch = pick(le, "ppc64le", "ppc64")
	case elf.EM_S390:
		arch = "s390x"
	case elf.EM_LOONGARCH:
		arch = "loong64"
	case elf.EM_MIPS:
		arch = pick(is64, pick(le, "mips64le", "mips64"), pick(le, "mipsle", "mips"))
	}
	if arch == "" {
		return "", fmt.Errorf("%w: ELF machine %v", ErrUnknownFormat, f.Machine)
	}
	return goos + "/" + arch, nil
}

// isMachO reports whether magic starts a thin Mach-O file.
func isMachO(magic []byte) bool {
	for _, m := range []uint32{macho.Magic32, macho.Magic64} {
		be := []byte{byte(m >> 24), byte(m >> 16), byte(m >> 8), byte(m)}
		le := []byte{be[3], be[2], be[1], be[0]}
		if bytes.Equal(magic, be) || bytes.Equal(magic, le) {
			return true
		}
	}
	return false
}

// machoPlatform maps a Mach-O header to darwin/GOARCH.
func machoPlatform(r io.ReaderAt) (string, error) {
	f, err := macho.NewFile(r)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnknownFormat, err)
	}
	arch := map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}[f.Cpu]
	if arch == "" {
		return "", fmt.Errorf("%w: Mach-O CPU %v", ErrUnknownFormat, f.Cpu)
	}
	return "darwin/" + arch, nil
}

// pePlatform maps a PE header to windows/GOARCH.
func pePlatform(r io.ReaderAt) (string, error) {
	f, err := pe.NewFile(r)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnknownFormat, err)
	}
	arch := map[uint16]string{pe.IMAGE_FILE_MACHINE_AMD64: "amd64", pe.IMAGE_FILE_MACHINE_ARM64: "arm64", pe.IMAGE_FILE_MACHINE_I386: "386"}[f.Machine]
	if arch == "" {
		return "", fmt.Errorf("%w: PE machine %#x", ErrUnknownFormat, f.Machine)
	}
	return "windows/" + arch, nil
}

// pick returns a when cond, else b.
func pick(cond bool, a, b string) string {
	if cond {
		return a
	}
	return b
}

// validPlatform reports whether p is PlatformAny or "GOOS/GOARCH" (two
// non-empty lower-case words).
func validPlatform(p string) bool {
	if p == PlatformAny {
		return true
	}
	goos, arch, ok := strings.Cut(p, "/")
	word := func(s string) bool {
		return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789") == ""
	}
	return ok && word(goos) && word(arch)
}
