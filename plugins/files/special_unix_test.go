//go:build unix

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/testkit"
)

// hangBound is how long a call may take before it is taken to hang. It
// only matters when the call does hang (the bug); a correct call returns
// at once.
const hangBound = 5 * time.Second

// callReturns runs call(tk, name, args, out) in a goroutine and returns its
// error, failing the test at once when the call has not returned within
// hangBound. unblock, if not nil, is then run to free the stuck goroutine.
func callReturns(t *testing.T, tk *pluginsdk.Toolkit, name, args string, out any, unblock func()) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call(tk, name, args, out) }()
	select {
	case err := <-done:
		return err
	case <-time.After(hangBound):
		if unblock != nil {
			unblock()
		}
		t.Fatalf("%s(%s) has not returned after %v: it blocks", name, args, hangBound)
		return nil
	}
}

// unblockFIFO opens the FIFO at path for writing without blocking, which
// lets a reader stuck in open(2) on it go on.
func unblockFIFO(path string) func() {
	return func() {
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}
}

// specialSetup adds to setup's layout:
//
//	root/pipe.fifo              a named pipe no one writes to
//	root/fifolink -> pipe.fifo  (symlink inside the root)
//	root/sock                   a listening unix socket
func specialSetup(t *testing.T) (tk *pluginsdk.Toolkit, root, fifo string) {
	t.Helper()
	tk, root = setup(t)
	fifo = filepath.Join(root, "pipe.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.Symlink("pipe.fifo", filepath.Join(root, "fifolink")); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(root, "sock"))
	if err != nil {
		t.Skipf("unix socket: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return tk, root, fifo
}

func TestReadFileRefusesSpecialFiles(t *testing.T) {
	tk, _, fifo := specialSetup(t)
	for _, tc := range []struct{ path, want string }{
		{"pipe.fifo", `path "pipe.fifo" is not a regular file (named pipe)`},
		{"fifolink", `path "fifolink" is not a regular file (named pipe)`},
		{"sock", `path "sock" is not a regular file (socket)`},
	} {
		args, _ := json.Marshal(map[string]any{"path": tc.path})
		var out readFileOut
		err := callReturns(t, tk, "read_text", string(args), &out, unblockFIFO(fifo))
		testkit.WantToolError(t, err, pluginsdk.CodeInvalidArguments, tc.want)
	}
	// Many calls in a row all answer (the finding: seven hung calls got
	// the plugin marked failed).
	for range 10 {
		var out readFileOut
		err := callReturns(t, tk, "read_text", `{"path":"pipe.fifo"}`, &out, unblockFIFO(fifo))
		testkit.WantToolError(t, err, pluginsdk.CodeInvalidArguments, "named pipe")
	}
}

func TestListDirWithSpecialFiles(t *testing.T) {
	tk, _, fifo := specialSetup(t)
	var out listDirOut
	if err := callReturns(t, tk, "list_dir", `{}`, &out, unblockFIFO(fifo)); err != nil {
		t.Fatalf("list_dir: %v", err)
	}
	got := map[string]string{}
	for _, e := range out.Entries {
		got[e.Name] = e.Type
	}
	want := map[string]string{
		"a.txt": "file", "bin.dat": "file", "sub": "dir", ".git": "dir",
		"escape": "symlink", "escfile": "symlink", "abs": "symlink", "inlink": "symlink",
		"pipe.fifo": "other", "fifolink": "symlink", "sock": "other",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("list_dir = %v, want %v", got, want)
	}
	for _, tc := range []struct{ path, want string }{
		{"pipe.fifo", `path "pipe.fifo" is not a folder (named pipe)`},
		{"fifolink", `path "fifolink" is not a folder (named pipe)`},
		{"sock", `path "sock" is not a folder (socket)`},
	} {
		args, _ := json.Marshal(map[string]any{"path": tc.path})
		err := callReturns(t, tk, "list_dir", string(args), &out, unblockFIFO(fifo))
		testkit.WantToolError(t, err, pluginsdk.CodeInvalidArguments, tc.want)
	}
}

func TestSearchSkipsSpecialFiles(t *testing.T) {
	tk, _, fifo := specialSetup(t)
	var out searchOut
	if err := callReturns(t, tk, "search_text", `{"pattern":"hello"}`, &out, unblockFIFO(fifo)); err != nil {
		t.Fatalf("search: %v", err)
	}
	if len(out.Matches) != 3 {
		t.Errorf("search = %+v, want the 3 matches of TestSearch", out.Matches)
	}
	for _, p := range []string{"pipe.fifo", "fifolink", "sock"} {
		args, _ := json.Marshal(map[string]any{"pattern": "hello", "path": p})
		if err := callReturns(t, tk, "search_text", string(args), &out, unblockFIFO(fifo)); err != nil {
			t.Errorf("search in %s: %v", p, err)
		} else if len(out.Matches) != 0 {
			t.Errorf("search in %s = %+v, want none", p, out.Matches)
		}
	}
}

// TestOpenCheckedFstat checks the type check on the opened descriptor alone
// (without the stat before it, as when a file is swapped for a pipe after
// being checked): a FIFO is opened without blocking and refused.
func TestOpenCheckedFstat(t *testing.T) {
	_, root, fifo := specialSetup(t)
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, name := range []string{"pipe.fifo", "fifolink"} {
		for _, w := range []want{wantFile, wantDir, wantFileOrDir} {
			done := make(chan error, 1)
			go func() {
				f, _, err := openChecked(r, name, w)
				if f != nil {
					f.Close()
				}
				done <- err
			}()
			select {
			case err = <-done:
			case <-time.After(hangBound):
				unblockFIFO(fifo)()
				t.Fatalf("openChecked(%s, %v) has not returned after %v: it blocks", name, w, hangBound)
			}
			var ke *kindError
			if !errors.As(err, &ke) || ke.Mode&fs.ModeNamedPipe == 0 || ke.Want != w {
				t.Errorf("openChecked(%s, %v) error = %v, want a *kindError for a named pipe", name, w, err)
			}
		}
	}
	// open(2) of a socket fails (ENXIO); the tool error is still a 400.
	if f, _, err := openChecked(r, "sock", wantFile); err == nil {
		f.Close()
		t.Errorf("openChecked(sock) succeeded")
	} else {
		ft := &filesTool{root: r}
		testkit.WantToolError(t, ft.pathError("sock", err), pluginsdk.CodeInvalidArguments, `path "sock" is not a regular file`)
	}
	// Regular files and folders are opened as wanted.
	for _, tc := range []struct {
		name string
		w    want
	}{{"a.txt", wantFile}, {"a.txt", wantFileOrDir}, {"sub", wantDir}, {"sub", wantFileOrDir}, {"inlink", wantFile}} {
		f, _, err := openChecked(r, tc.name, tc.w)
		if err != nil {
			t.Errorf("openChecked(%s, %v): %v", tc.name, tc.w, err)
			continue
		}
		f.Close()
	}
	// Confinement still holds.
	if f, _, err := openChecked(r, "escfile", wantFile); err == nil {
		f.Close()
		t.Errorf("openChecked(escfile) left the root")
	}
}

// TestDevicesRefused reads devices of the system's /dev through a root
// there (a symbolic link from another root to /dev/null would be refused
// as leaving the root before its type matters).
func TestDevicesRefused(t *testing.T) {
	for _, name := range []string{"null", "zero"} {
		if info, err := os.Stat(filepath.Join("/dev", name)); err != nil || info.Mode()&fs.ModeCharDevice == 0 {
			t.Skipf("/dev/%s is not a character device here", name)
		}
	}
	ft, err := newFilesTool("/dev")
	if err != nil {
		t.Skipf("open /dev as root: %v", err)
	}
	defer ft.Close()
	tk := ft.toolkit()
	for _, name := range []string{"null", "zero"} {
		var out any
		args := fmt.Sprintf(`{"path":%q}`, name)
		err := callReturns(t, tk, "read_text", args, &out, nil)
		testkit.WantToolError(t, err, pluginsdk.CodeInvalidArguments, fmt.Sprintf("path %q is not a regular file (character device)", name))
		err = callReturns(t, tk, "list_dir", args, &out, nil)
		testkit.WantToolError(t, err, pluginsdk.CodeInvalidArguments, fmt.Sprintf("path %q is not a folder (character device)", name))
		// The check on the opened descriptor refuses it too.
		f, _, err := openChecked(ft.root, name, wantFile)
		var ke *kindError
		if !errors.As(err, &ke) || ke.Mode&fs.ModeCharDevice == 0 {
			if f != nil {
				f.Close()
			}
			t.Errorf("openChecked(/dev/%s) error = %v, want a *kindError for a character device", name, err)
		}
	}
	// A symbolic link from another root to /dev/null is refused as leaving
	// that root.
	tk2, root := setup(t)
	if err := os.Symlink("/dev/null", filepath.Join(root, "devnull")); err != nil {
		t.Fatal(err)
	}
	var out any
	err = callReturns(t, tk2, "read_text", `{"path":"devnull"}`, &out, nil)
	testkit.WantToolError(t, err, pluginsdk.CodeInvalidArguments, `path "devnull" is outside the root`)
}
