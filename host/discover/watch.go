package discover

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"
	"github.com/opentool-host/opentool-host/host/core"
)

// Watcher turns fsnotify events on the plugins directory into plugin
// starts, replacements and removals. It watches the folder, not the files,
// so that every way of putting a file in place is seen: cp (many WRITEs),
// install (CREATE 0600, then CHMOD), mv into place (RENAME + CREATE),
// go build -o (CREATE, WRITEs, CHMOD).
//
// A partial file is never executed: events are debounced per path, and a
// file is acted on only once its size and mtime have not changed for
// Config.SettleTime and its exec bit is set. Names that break the naming
// rule (dotfiles, editors' temp files) are ignored. An event queue
// overflow triggers a full rescan.
type Watcher struct {
	h    *watchTarget
	fs   *fsnotify.Watcher
	done chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	pending map[string]*pendingFile // path -> debounce state
}

// pendingFile is the debounce state of one changed path.
type pendingFile struct {
	timer *time.Timer
	last  FileStamp
	seen  bool // last is valid
	// reported is the reason the settled file is not acted on that was
	// last reported (logged, listed by Host.Ignored); "" for none.
	reported string
}

// watchTarget is what a watcher reads and tells: the host's settings
// (Dir, SettleTime), its logger, and the host's Rescan and syncPath.
type watchTarget struct {
	cfg      *core.Config
	log      hclog.Logger
	Rescan   func(ctx context.Context) error // rescans the whole folder
	syncPath func(path string)
}

// NewWatcher watches cfg.Dir until Close: a path that settled (or is
// gone) is handed to syncPath, an event queue overflow makes it call
// rescan. Errors: fsnotify's, when the folder cannot be watched.
func NewWatcher(cfg *core.Config, log hclog.Logger, rescan func(ctx context.Context) error, syncPath func(path string)) (*Watcher, error) {
	return newWatcher(&watchTarget{cfg: cfg, log: log, Rescan: rescan, syncPath: syncPath})
}

// newWatcher watches h's plugins directory until close.
func newWatcher(h *watchTarget) (*Watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := fw.Add(h.cfg.Dir); err != nil {
		fw.Close()
		return nil, err
	}
	w := &Watcher{h: h, fs: fw, done: make(chan struct{}), pending: map[string]*pendingFile{}}
	w.wg.Add(1)
	go w.loop()
	h.log.Info("watching plugins dir", "dir", h.cfg.Dir)
	return w, nil
}

// loop handles fsnotify events and errors until close.
func (w *Watcher) loop() {
	defer w.wg.Done()
	for {
		select {
		case <-w.done:
			return
		case ev, ok := <-w.fs.Events:
			if !ok {
				return
			}
			w.event(ev)
		case err, ok := <-w.fs.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.h.log.Warn("fsnotify event queue overflowed; rescanning plugins dir")
				go w.rescan()
				continue
			}
			w.h.log.Error("watching plugins dir", "error", err)
		}
	}
}

// rescan rescans the whole directory (after an event queue overflow).
func (w *Watcher) rescan() {
	if err := w.h.Rescan(context.Background()); err != nil && !errors.Is(err, core.ErrClosed) {
		w.h.log.Error("rescan failed", "error", err)
	}
}

// event debounces ev's path: every event restarts its settle timer.
func (w *Watcher) event(ev fsnotify.Event) {
	base := filepath.Base(ev.Name)
	if !isDropIn(base) {
		if hint := desktopConfigHint(base); hint != "" && ev.Has(fsnotify.Create) {
			w.h.log.Warn("not reading file in plugins dir", "file", base, "reason", hint)
		}
		w.h.log.Trace("ignoring event for non-plugin file", "file", base, "op", ev.Op.String())
		return
	}
	w.h.log.Debug("plugins dir event", "file", base, "op", ev.Op.String())
	w.mu.Lock()
	defer w.mu.Unlock()
	pf, ok := w.pending[ev.Name]
	if !ok {
		pf = &pendingFile{}
		w.pending[ev.Name] = pf
		path := ev.Name
		pf.timer = time.AfterFunc(w.h.cfg.SettleTime, func() { w.settle(path) })
		return
	}
	pf.seen = false // changed again: wait for a fresh stable pair
	pf.timer.Reset(w.h.cfg.SettleTime)
}

// settle runs when path had no event for SettleTime. It acts when the
// file is gone (remove), or when its stamp is the same as at the previous
// check and it is executable (start or replace); otherwise it checks again
// after SettleTime. A settled file that cannot run (not executable, not a
// regular file) is synced once per reason, so that it is logged and
// listed (Host.Ignored) while it waits for its exec bit.
func (w *Watcher) settle(path string) {
	select {
	case <-w.done:
		return
	default:
	}
	fi, err := os.Stat(path)
	w.mu.Lock()
	pf := w.pending[path]
	if pf == nil {
		w.mu.Unlock()
		return
	}
	if err != nil {
		delete(w.pending, path)
		w.mu.Unlock()
		if os.IsNotExist(err) {
			w.h.syncPath(path)
		}
		return
	}
	st := StampOf(fi)
	if why := notReady(pf, st, fi, isDataFile(filepath.Base(path))); why != "" {
		report := why != notReadyChanging && why != pf.reported
		pf.last, pf.seen = st, true
		if report {
			pf.reported = why
		}
		pf.timer.Reset(w.h.cfg.SettleTime)
		w.mu.Unlock()
		w.h.log.Debug("plugin file not ready; checking again", "file", filepath.Base(path), "reason", why)
		if report { // settled but not runnable: said at once, as a scan does
			w.h.syncPath(path)
		}
		return
	}
	delete(w.pending, path)
	w.mu.Unlock()
	w.h.syncPath(path)
}

// notReadyChanging is notReady's reason for a file still being written.
const notReadyChanging = "changing"

// notReady says why a file with stamp st (fi) is not to be acted on
// yet: it changed since the previous check (or was not checked yet), it
// is not a regular file, or it is an executable (not a declaration)
// without an exec bit; "" when it is ready.
func notReady(pf *pendingFile, st FileStamp, fi os.FileInfo, declaration bool) string {
	switch {
	case !pf.seen || !pf.last.Equal(st):
		return notReadyChanging
	case !fi.Mode().IsRegular():
		return "not a regular file"
	case !declaration && fi.Mode().Perm()&0o111 == 0:
		return "not executable"
	}
	return ""
}

// Close stops watching and waits for the event loop to end.
func (w *Watcher) Close() {
	close(w.done)
	w.fs.Close()
	w.wg.Wait()
	w.mu.Lock()
	for _, pf := range w.pending {
		pf.timer.Stop()
	}
	w.mu.Unlock()
}
