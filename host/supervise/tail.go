package supervise

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/time/rate"
)

// TailBuffer is an io.Writer that keeps the last n lines written to it
// (a plugin's stderr), for error reports.
type TailBuffer struct {
	mu      sync.Mutex
	n       int
	buf     []string
	partial strings.Builder
	oom     bool // a line said an allocation failed (outOfMemory)
}

// NewTailBuffer returns a TailBuffer that keeps the last n lines.
func NewTailBuffer(n int) *TailBuffer { return &TailBuffer{n: n} }

// Write implements io.Writer; it never fails.
func (t *TailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(p)
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			if t.partial.Len() < 4096 {
				t.partial.WriteString(s)
			}
			return len(p), nil
		}
		t.partial.WriteString(s[:i])
		t.push(t.partial.String())
		t.partial.Reset()
		s = s[i+1:]
	}
}

func (t *TailBuffer) push(line string) {
	line = strings.TrimSpace(line)
	if line == "" {
		return
	}
	t.oom = t.oom || outOfMemory(line)
	if len(line) > 512 {
		line = line[:512] + "…"
	}
	if len(t.buf) == t.n {
		copy(t.buf, t.buf[1:])
		t.buf = t.buf[:t.n-1]
	}
	t.buf = append(t.buf, line)
}

// SawOutOfMemory reports whether any line written said an allocation
// failed (the line itself may have left the tail: a Go runtime prints
// every goroutine's stack after it).
func (t *TailBuffer) SawOutOfMemory() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.oom
}

// oomLines are what runtimes print when an allocation fails under an
// address-space limit (Go, Python, Node, C).
var oomLines = []string{"out of memory", "MemoryError", "cannot allocate memory", "Cannot allocate memory"}

// outOfMemory reports whether a line says an allocation failed.
func outOfMemory(line string) bool {
	for _, s := range oomLines {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

// Lines returns a copy of the kept lines, oldest first, including an
// unterminated last line.
func (t *TailBuffer) Lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.buf...)
	if p := strings.TrimSpace(t.partial.String()); p != "" {
		out = append(out, p)
	}
	return out
}

// Plugin log limits: a plugin may log logBurst lines at once and logRate
// lines per second on average; the rest are counted, not logged, and the
// count is reported when logging resumes. The tail keeps every line.
const (
	logRate       = 100
	logBurst      = 500
	maxLogLineLen = 8 << 10 // bytes; a longer line is cut, saying how much
)

// LineLogger is an io.Writer for what a plugin writes: its stderr pipe, and
// for Go plugins the stdout and stderr go-plugin syncs over gRPC after
// Serve. It copies everything into tail and logs each complete line under
// the plugin's logger at the level the line names: a "[ERROR] " style
// prefix (go-plugin's convention), or hclog JSON whose "@level" and
// "@message" are strings, else at level. The plugin is not trusted: any
// bytes are safe (go-plugin's own stderr parser panics on JSON whose
// "@message" is not a string, so the host never lets it see the stream),
// and a flood is rate limited.
type LineLogger struct {
	Log    hclog.Logger // where each line is logged ("plugin.NAME")
	Tail   *TailBuffer  // keeps the last lines too (nil: none)
	Stream string       // "stderr" or "stdout", logged with each line
	Level  hclog.Level  // for lines that name none; zero means Info

	mu      sync.Mutex
	partial []byte // the line so far, at most maxLogLineLen bytes
	cut     int    // bytes of the line beyond maxLogLineLen, dropped
	limit   *rate.Limiter
	dropped int
}

// Write implements io.Writer; it never fails.
func (l *LineLogger) Write(p []byte) (int, error) {
	_, _ = l.Tail.Write(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		room := maxLogLineLen - len(l.partial)
		if len(chunk) > room {
			l.partial = append(l.partial, chunk[:room]...)
			l.cut += len(chunk) - room
		} else {
			l.partial = append(l.partial, chunk...)
		}
		if i < 0 {
			break
		}
		l.endLine()
		p = p[i+1:]
	}
	return n, nil
}

// endLine logs the line collected so far (cut lines say by how much).
func (l *LineLogger) endLine() {
	line := strings.TrimRight(string(l.partial), "\r")
	if l.cut > 0 {
		line += fmt.Sprintf(" … [%d bytes cut]", l.cut)
	}
	l.partial, l.cut = l.partial[:0], 0
	if line != "" {
		l.emit(line)
	}
}

// emit logs one line, within the rate limit.
func (l *LineLogger) emit(line string) {
	if l.limit == nil {
		l.limit = rate.NewLimiter(logRate, logBurst)
	}
	if !l.limit.Allow() {
		l.dropped++
		return
	}
	if l.dropped > 0 {
		l.Log.Warn("plugin log lines dropped: over the rate limit", "stream", l.Stream, "dropped", l.dropped, "limit_per_s", logRate)
		l.dropped = 0
	}
	level, msg, args := parseLogLine(line)
	if level == hclog.NoLevel {
		level = l.Level
		if level == hclog.NoLevel {
			level = hclog.Info
		}
	}
	l.Log.Log(level, msg, append(args, "stream", l.Stream)...)
}

// logPrefixes are the level prefixes go-plugin recognizes on plain lines.
var logPrefixes = []struct {
	prefix string
	level  hclog.Level
}{{"[TRACE]", hclog.Trace}, {"[DEBUG]", hclog.Debug}, {"[INFO]", hclog.Info}, {"[WARN]", hclog.Warn}, {"[ERROR]", hclog.Error}}

// parseLogLine reads a plugin's log line: hclog JSON (string "@level" and
// "@message"; other members become key/value pairs, sorted by key) or a
// plain line with an optional "[LEVEL]" prefix (removed). NoLevel when the
// line names none. Never panics, whatever the line holds.
func parseLogLine(line string) (hclog.Level, string, []any) {
	if strings.HasPrefix(line, "{") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			msg, ok := m["@message"].(string)
			lvl, _ := m["@level"].(string)
			if ok {
				keys := make([]string, 0, len(m))
				for k := range m {
					if !strings.HasPrefix(k, "@") {
						keys = append(keys, k)
					}
				}
				sort.Strings(keys)
				args := make([]any, 0, 2*len(keys))
				for _, k := range keys {
					args = append(args, k, m[k])
				}
				return hclog.LevelFromString(lvl), msg, args
			}
		}
	}
	for _, p := range logPrefixes {
		if strings.HasPrefix(line, p.prefix) {
			return p.level, strings.TrimSpace(line[len(p.prefix):]), nil
		}
	}
	return hclog.NoLevel, line, nil
}
