package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
)

// I/O granularity: how much is read, or how many folder entries are
// fetched, between two checks of the call's context.
const (
	// readChunk is the most bytes read between context checks.
	readChunk = 64 << 10
	// dirBatch is the most folder entries fetched between context checks.
	dirBatch = 256
)

// openFlags opens for reading without blocking: without O_NONBLOCK, open(2)
// of a named pipe waits until a writer appears, possibly forever.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK

// want is the kind of file an open accepts.
type want int

// The kinds of file openChecked accepts.
const (
	wantFile      want = iota // a regular file
	wantDir                   // a folder
	wantFileOrDir             // either
)

// accepts reports whether mode is of the wanted kind.
func (w want) accepts(mode fs.FileMode) bool {
	switch w {
	case wantFile:
		return mode.IsRegular()
	case wantDir:
		return mode.IsDir()
	default:
		return mode.IsRegular() || mode.IsDir()
	}
}

// String describes the wanted kind for error messages.
func (w want) String() string {
	switch w {
	case wantFile:
		return "a regular file"
	case wantDir:
		return "a folder"
	default:
		return "a regular file or folder"
	}
}

// kindError is the error for a file that is not of the wanted kind.
type kindError struct {
	// Want is the kind that was wanted.
	Want want
	// Mode is the mode of the file found, its type bits telling its kind.
	Mode fs.FileMode
}

// Error implements error: "is not a regular file (named pipe)".
func (e *kindError) Error() string {
	return fmt.Sprintf("is not %v (%s)", e.Want, kindName(e.Mode))
}

// kindName names a file mode's type for error messages.
func kindName(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m.IsDir():
		return "folder"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	default:
		return "special file"
	}
}

// openChecked opens name in root for reading with O_NONBLOCK, so that a
// named pipe cannot block the open, then checks the type of what was
// actually opened (fstat on the descriptor, so a file swapped for a pipe or
// device after an earlier stat is still caught). It returns the open file
// and its info, or a *kindError (the file closed) when the file is not of
// kind w, or the open or stat error. os.Root keeps the open inside the root.
//
// For a regular file the O_NONBLOCK flag stays set; it has no effect on
// regular files or folders.
func openChecked(root *os.Root, name string, w want) (*os.File, fs.FileInfo, error) {
	f, err := root.OpenFile(name, openFlags, 0)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !w.accepts(info.Mode()) {
		f.Close()
		return nil, nil, &kindError{Want: w, Mode: info.Mode()}
	}
	return f, info, nil
}

// statChecked checks, without opening it, that name in root (symbolic
// links inside the root followed) is of kind w. It returns the file's info,
// a *kindError, or the stat error. It is a first check only, to avoid
// opening devices at all (opening some has side effects); openChecked's
// check on the opened descriptor is the one that counts.
func statChecked(root *os.Root, name string, w want) (fs.FileInfo, error) {
	info, err := root.Stat(name)
	if err != nil {
		return nil, err
	}
	if !w.accepts(info.Mode()) {
		return nil, &kindError{Want: w, Mode: info.Mode()}
	}
	return info, nil
}

// readAtMost reads from r until EOF or n bytes, whichever comes first, in
// chunks of at most readChunk bytes. It checks ctx before each chunk and
// returns ctx's error, and no data, once ctx is done. sizeHint, when
// positive, pre-sizes the buffer.
func readAtMost(ctx context.Context, r io.Reader, n int64, sizeHint int64) ([]byte, error) {
	var buf bytes.Buffer
	if sizeHint > 0 {
		buf.Grow(int(min(sizeHint, n)))
	}
	chunk := make([]byte, readChunk)
	for int64(buf.Len()) < n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		k, err := r.Read(chunk[:min(int64(len(chunk)), n-int64(buf.Len()))])
		buf.Write(chunk[:k])
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// readDirSorted reads all of folder f's entries, sorted by name, fetching
// at most dirBatch entries between checks of ctx. It returns ctx's error
// once ctx is done.
func readDirSorted(ctx context.Context, f *os.File) ([]fs.DirEntry, error) {
	var all []fs.DirEntry
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		des, err := f.ReadDir(dirBatch)
		all = append(all, des...)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(all, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return all, nil
}

// walkFS is the fs.FS that search walks: it reads folders with
// readDirSorted and opens only regular files and folders with openChecked,
// so that neither a named pipe nor a device can block or be opened, and
// long folder listings stop when ctx is done.
type walkFS struct {
	ctx  context.Context
	root *os.Root
}

// Open opens a regular file or folder; anything else is refused with a
// *fs.PathError wrapping a *kindError.
func (w walkFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	f, _, err := openChecked(w.root, name, wantFileOrDir)
	if err != nil {
		return nil, asPathError("open", name, err)
	}
	return f, nil
}

// Stat returns name's info, following symbolic links inside the root,
// without opening it.
func (w walkFS) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrInvalid}
	}
	return w.root.Stat(name)
}

// ReadDir lists folder name, sorted by name, checking the context between
// batches of entries.
func (w walkFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	f, _, err := openChecked(w.root, name, wantDir)
	if err != nil {
		return nil, asPathError("readdir", name, err)
	}
	defer f.Close()
	return readDirSorted(w.ctx, f)
}

// asPathError wraps err in a *fs.PathError unless it already is one.
func asPathError(op, name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return err
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}
