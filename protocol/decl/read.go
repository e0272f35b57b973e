package decl

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrLeavesFolder is the error of ReadDropIn for a symbolic link that
// leads outside the drop-in's folder.
var ErrLeavesFolder = errors.New("a symbolic link leaving the plugins folder: a drop-in file is read only inside it (link within the folder, or copy the file in)")

// ReadFile reads the regular file at path, of at most limit bytes: an
// operator's file (an --mcp-config, a secret), whose symbolic links are
// followed anywhere. Errors: those of os.Open (fs.ErrNotExist when there
// is no such file), "not a regular file", "larger than LIMIT bytes".
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return readOpened(f, limit)
}

// ReadDropIn is ReadFile for a file of the untrusted plugins folder (a
// declaration, a policy, an envFile): opened within its folder (os.Root),
// so that a symbolic link leading outside it is refused, before a byte of
// its target is read; a link within the folder (a Kubernetes ConfigMap's
// ..data/FILE) is followed. Errors: ErrLeavesFolder, and those of
// ReadFile.
func ReadDropIn(path string, limit int64) ([]byte, error) {
	f, err := openInFolder(filepath.Dir(path), filepath.Base(path))
	if err != nil {
		return nil, err
	}
	return readOpened(f, limit)
}

// openInFolder opens rel (a path relative to dir, which it must not
// leave) within dir. Errors: fs.ErrNotExist, ErrLeavesFolder (also for a
// rel that leaves dir by ".."), or os.Root's.
func openInFolder(dir, rel string) (*os.File, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		if fi, lerr := os.Lstat(filepath.Join(dir, rel)); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 || !filepath.IsLocal(rel) {
			return nil, ErrLeavesFolder
		}
	}
	return f, err
}

// readOpened reads f, a regular file of at most limit bytes, and closes
// it.
func readOpened(f *os.File, limit int64) ([]byte, error) {
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(data)) > limit {
		err = fmt.Errorf("larger than %d bytes", limit)
	}
	return data, err
}
