package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// Limits of the tools. Sizes are in bytes.
const (
	// defaultReadBytes is read_text's max_bytes when not given (64 KiB).
	defaultReadBytes = 64 << 10
	// maxReadBytes is the largest max_bytes read_text honours (1 MiB);
	// larger values are lowered to it.
	maxReadBytes = 1 << 20
	// maxListEntries is the most entries list_dir returns.
	maxListEntries = 1000
	// defaultMatches is search_text's max_matches when not given.
	defaultMatches = 100
	// maxMatches is the largest max_matches search_text honours.
	maxMatches = 1000
	// maxSearchFileBytes is the size above which search_text skips a file.
	maxSearchFileBytes = 1 << 20
	// maxLineBytes is the most of a matching line search returns.
	maxLineBytes = 500
	// sniffBytes is how much of a file is checked for NUL bytes to decide
	// that it is binary.
	sniffBytes = 8000
)

// filesTool serves read-only file tools over one root folder. It is safe
// for concurrent use. It opens only regular files and folders, never named
// pipes, sockets or devices (see openChecked), and every call stops with
// its context's error once the context is done.
type filesTool struct {
	root *os.Root
}

// newFilesTool opens dir as the root. The error is os.OpenRoot's, wrapped.
func newFilesTool(dir string) (*filesTool, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open root folder: %w", err)
	}
	return &filesTool{root: root}, nil
}

// Close closes the root.
func (t *filesTool) Close() error { return t.root.Close() }

// toolkit returns the tools as a Toolkit.
func (t *filesTool) toolkit() *pluginsdk.Toolkit {
	abs, err := filepath.Abs(t.root.Name())
	if err != nil {
		abs = t.root.Name()
	}
	tk := pluginsdk.NewToolkit(opentool.Info{
		Title:       "Files",
		Version:     "1.0.0",
		Description: "Read-only access to the files under " + abs + ". Paths are relative to that folder; paths leaving it are refused.",
	})
	return tk.Add(
		pluginsdk.Func("list_dir", "List the entries of a folder: name, type (file, dir, symlink or other) and size in bytes.", t.listDir),
		pluginsdk.Func("read_text", "Read a text file, up to max_bytes bytes. Only regular files are read: named pipes, sockets and devices are refused.", t.readFile),
		pluginsdk.Func("search_text", "Search the text files under a folder for lines containing a pattern (plain text, or a Go regular expression when regexp is true). Binary files and files over 1 MiB are skipped, as are symbolic links and .git folders.", t.search),
	)
}

// listDirIn are list_dir's arguments.
type listDirIn struct {
	Path string `json:"path,omitempty" jsonschema:"description=Folder to list, relative to the root (default: the root itself)"`
}

// entry is one list_dir entry.
type entry struct {
	Name string `json:"name" jsonschema:"description=Entry name"`
	Type string `json:"type" jsonschema:"enum=file,enum=dir,enum=symlink,enum=other,description=Entry type; symbolic links are not followed"`
	Size int64  `json:"size" jsonschema:"description=Size in bytes (of the link itself for a symlink)"`
}

// listDirOut is list_dir's result.
type listDirOut struct {
	Entries   []entry `json:"entries" jsonschema:"description=The folder's entries sorted by name"`
	Truncated bool    `json:"truncated" jsonschema:"description=True when the folder has more than 1000 entries and only the first 1000 are listed"`
}

// listDir lists a folder. Entries of any type (named pipes too) are
// listed; none is opened. Errors: code 400 for a path outside the root,
// missing or not a folder; code 500 for other I/O errors; the context's
// error when ctx ends.
func (t *filesTool) listDir(ctx context.Context, in listDirIn) (listDirOut, error) {
	name, err := t.clean(in.Path)
	if err != nil {
		return listDirOut{}, err
	}
	f, _, err := t.open(in.Path, name, wantDir)
	if err != nil {
		return listDirOut{}, err
	}
	defer f.Close()
	des, err := readDirSorted(ctx, f)
	if err != nil {
		if ctx.Err() != nil {
			return listDirOut{}, ctx.Err()
		}
		return listDirOut{}, t.pathError(in.Path, err)
	}
	out := listDirOut{Entries: []entry{}}
	for _, de := range des {
		if len(out.Entries) == maxListEntries {
			out.Truncated = true
			break
		}
		e := entry{Name: de.Name(), Type: entryType(de.Type())}
		if info, err := de.Info(); err == nil {
			e.Size = info.Size()
		}
		out.Entries = append(out.Entries, e)
	}
	return out, nil
}

// entryType names a file mode's type for list_dir.
func entryType(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	default:
		return "other"
	}
}

// readFileIn are read_text's arguments.
type readFileIn struct {
	Path     string `json:"path" jsonschema:"description=File to read, relative to the root"`
	MaxBytes int    `json:"max_bytes,omitempty" jsonschema_description:"Most bytes to return (default 65536, at most 1048576; larger values are lowered)"`
}

// readFileOut is read_text's result.
type readFileOut struct {
	Content   string `json:"content" jsonschema:"description=The file's text (its first max_bytes bytes)"`
	Truncated bool   `json:"truncated" jsonschema:"description=True when the file is longer than the returned content"`
	Size      int64  `json:"size" jsonschema:"description=The file's full size in bytes"`
}

// readFile reads the start of a text file. Errors: code 400 for a path
// outside the root, missing, not a regular file (a folder, named pipe,
// socket or device), a negative max_bytes or a binary file (one with a NUL
// byte in its start); code 500 for other I/O errors; the context's error
// when ctx ends.
func (t *filesTool) readFile(ctx context.Context, in readFileIn) (readFileOut, error) {
	limit := in.MaxBytes
	switch {
	case limit < 0:
		return readFileOut{}, pluginsdk.InvalidArguments("max_bytes must not be negative, got %d", limit)
	case limit == 0:
		limit = defaultReadBytes
	case limit > maxReadBytes:
		limit = maxReadBytes
	}
	name, err := t.clean(in.Path)
	if err != nil {
		return readFileOut{}, err
	}
	f, info, err := t.open(in.Path, name, wantFile)
	if err != nil {
		return readFileOut{}, err
	}
	defer f.Close()
	buf, err := readAtMost(ctx, f, int64(limit)+1, info.Size()+1)
	if err != nil {
		if ctx.Err() != nil {
			return readFileOut{}, ctx.Err()
		}
		return readFileOut{}, pluginsdk.ToolFailure("read %q: %v", in.Path, err)
	}
	if isBinary(buf) {
		return readFileOut{}, pluginsdk.InvalidArguments("file %q looks binary (it contains NUL bytes); read_text returns text only", in.Path)
	}
	out := readFileOut{Size: info.Size()}
	if len(buf) > limit {
		buf = buf[:limit]
		out.Truncated = true
		// Do not split the last UTF-8 sequence.
		for i := 1; i < utf8.UTFMax && i <= len(buf); i++ {
			if r, size := utf8.DecodeLastRune(buf); r != utf8.RuneError || size != 1 {
				break
			}
			buf = buf[:len(buf)-1]
		}
	}
	if int64(len(buf)) < out.Size {
		out.Truncated = true
	}
	out.Content = string(buf)
	return out, nil
}

// isBinary reports whether b's start holds a NUL byte.
func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), sniffBytes)], 0) >= 0
}

// searchIn are search_text's arguments.
type searchIn struct {
	Pattern    string `json:"pattern" jsonschema:"description=Text to look for; a Go regular expression when regexp is true"`
	Regexp     bool   `json:"regexp,omitempty" jsonschema:"description=Treat pattern as a Go (RE2) regular expression"`
	Path       string `json:"path,omitempty" jsonschema:"description=Folder or file to search, relative to the root (default: the root itself)"`
	MaxMatches int    `json:"max_matches,omitempty" jsonschema_description:"Most matches to return (default 100, at most 1000; larger values are lowered)"`
}

// match is one matching line.
type match struct {
	Path string `json:"path" jsonschema:"description=File path relative to the root, with / separators"`
	Line int    `json:"line" jsonschema:"description=Line number, from 1"`
	Text string `json:"text" jsonschema:"description=The line (at most 500 bytes of it)"`
}

// searchOut is search_text's result.
type searchOut struct {
	Matches   []match `json:"matches" jsonschema:"description=Matching lines in path order"`
	Truncated bool    `json:"truncated" jsonschema:"description=True when there are more matches than max_matches"`
}

// search looks for pattern in the text files under in.Path. Errors: code
// 400 for an empty or invalid pattern, a negative max_matches, or a path
// outside the root or missing; the context's error when ctx ends.
func (t *filesTool) search(ctx context.Context, in searchIn) (searchOut, error) {
	if in.Pattern == "" {
		return searchOut{}, pluginsdk.InvalidArguments("pattern must not be empty")
	}
	limit := in.MaxMatches
	switch {
	case limit < 0:
		return searchOut{}, pluginsdk.InvalidArguments("max_matches must not be negative, got %d", limit)
	case limit == 0:
		limit = defaultMatches
	case limit > maxMatches:
		limit = maxMatches
	}
	matches := func(line string) bool { return strings.Contains(line, in.Pattern) }
	if in.Regexp {
		re, err := regexp.Compile(in.Pattern)
		if err != nil {
			return searchOut{}, pluginsdk.InvalidArguments("pattern is not a valid regular expression: %v", err)
		}
		matches = re.MatchString
	}
	start, err := t.clean(in.Path)
	if err != nil {
		return searchOut{}, err
	}
	if _, err := t.root.Stat(start); err != nil {
		return searchOut{}, t.pathError(in.Path, err)
	}
	out := searchOut{Matches: []match{}}
	errDone := errors.New("enough matches")
	err = fs.WalkDir(walkFS{ctx: ctx, root: t.root}, start, func(name string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			// An unreadable folder or file below the start is skipped
			// (also one swapped for a named pipe or device since listed).
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if d.Name() == ".git" && name != start {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		found, more, err := t.searchFile(ctx, name, matches, limit-len(out.Matches))
		if err != nil {
			return err
		}
		out.Matches = append(out.Matches, found...)
		if more {
			out.Truncated = true
			return errDone
		}
		return nil
	})
	if cerr := ctx.Err(); cerr != nil {
		return searchOut{}, cerr
	}
	if err != nil && !errors.Is(err, errDone) {
		return searchOut{}, err
	}
	return out, nil
}

// searchFile returns up to limit matching lines of file name, and whether
// it has more matches than that. Files that cannot be read, are not regular
// files (checked on the opened descriptor), are larger than
// maxSearchFileBytes or look binary give nothing. The error is ctx's, when
// ctx ends.
func (t *filesTool) searchFile(ctx context.Context, name string, matches func(string) bool, limit int) (found []match, more bool, err error) {
	f, info, err := openChecked(t.root, name, wantFile)
	if err != nil {
		return nil, false, nil
	}
	defer f.Close()
	if info.Size() > maxSearchFileBytes {
		return nil, false, nil
	}
	data, err := readAtMost(ctx, f, maxSearchFileBytes+1, info.Size()+1)
	if cerr := ctx.Err(); cerr != nil {
		return nil, false, cerr
	}
	if err != nil || len(data) > maxSearchFileBytes || isBinary(data) {
		return nil, false, nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxSearchFileBytes+1)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !matches(line) {
			continue
		}
		if len(found) == limit {
			return found, true, nil
		}
		found = append(found, match{Path: name, Line: n, Text: truncateLine(line)})
	}
	return found, false, nil
}

// truncateLine shortens line to at most maxLineBytes bytes without
// splitting a UTF-8 sequence.
func truncateLine(line string) string {
	if len(line) <= maxLineBytes {
		return line
	}
	cut := maxLineBytes
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return line[:cut]
}

// errOutside is the reason of the code-400 error for paths leaving the root.
var errOutside = errors.New("is outside the root")

// clean turns a path argument into a name for t.fsys: "" becomes ".",
// and absolute paths and paths that climb above the root with ".." are
// refused with code 400 `path "../x" is outside the root`. Symbolic links
// are checked later by os.Root itself.
func (t *filesTool) clean(p string) (string, error) {
	if p == "" {
		return ".", nil
	}
	if strings.ContainsRune(p, 0) {
		return "", pluginsdk.InvalidArguments("path %q contains a NUL byte", p)
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") || filepath.VolumeName(p) != "" {
		return "", outside(p)
	}
	name := path.Clean(filepath.ToSlash(p))
	if name == ".." || strings.HasPrefix(name, "../") || !fs.ValidPath(name) {
		return "", outside(p)
	}
	return name, nil
}

// outside returns the code-400 error for path p leaving the root.
func outside(p string) *pluginsdk.Error {
	return pluginsdk.InvalidArguments("path %q %v", p, errOutside)
}

// open opens path argument p, cleaned to name, if it is of kind w. The
// type is checked by stat first, so that a device or socket is not even
// opened, then again by openChecked on the opened descriptor, which is the
// check that holds if the file is swapped in between. Errors are tool
// errors from pathError.
func (t *filesTool) open(p, name string, w want) (*os.File, fs.FileInfo, error) {
	if _, err := statChecked(t.root, name, w); err != nil {
		return nil, nil, t.pathError(p, err)
	}
	f, info, err := openChecked(t.root, name, w)
	if err != nil {
		return nil, nil, t.pathError(p, err)
	}
	return f, info, nil
}

// pathError converts an error of an operation on path argument p into a
// tool error: code 400 when p leaves the root through a symbolic link, does
// not exist, is not accessible, is not of the kind wanted (a *kindError:
// `path "p" is not a regular file (named pipe)`) or is a special file that
// cannot be opened (ENXIO, as for a socket); code 500 otherwise.
func (t *filesTool) pathError(p string, err error) error {
	var pe *fs.PathError
	var ke *kindError
	switch {
	case errors.As(err, &ke):
		return pluginsdk.InvalidArguments("path %q %v", p, ke)
	case errors.Is(err, syscall.ENXIO):
		return pluginsdk.InvalidArguments("path %q is not a regular file or folder (no such device or address)", p)
	case errors.As(err, &pe) && pe.Err.Error() == "path escapes from parent":
		// os.Root's (unexported) error for a symbolic link leaving the root.
		return outside(p)
	case errors.Is(err, fs.ErrNotExist):
		return pluginsdk.InvalidArguments("path %q does not exist", p)
	case errors.Is(err, fs.ErrPermission):
		return pluginsdk.InvalidArguments("path %q: permission denied", p)
	}
	return pluginsdk.ToolFailure("path %q: %v", p, err)
}
