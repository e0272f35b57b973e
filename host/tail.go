package host

import (
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// tailBuffer is an io.Writer that keeps the last n lines written to it
// (a plugin's stderr), for error reports.
type tailBuffer struct {
	mu      sync.Mutex
	n       int
	buf     []string
	partial strings.Builder
}

func newTailBuffer(n int) *tailBuffer { return &tailBuffer{n: n} }

// Write implements io.Writer; it never fails.
func (t *tailBuffer) Write(p []byte) (int, error) {
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

func (t *tailBuffer) push(line string) {
	line = strings.TrimSpace(line)
	if line == "" {
		return
	}
	if len(line) > 512 {
		line = line[:512] + "…"
	}
	if len(t.buf) == t.n {
		copy(t.buf, t.buf[1:])
		t.buf = t.buf[:t.n-1]
	}
	t.buf = append(t.buf, line)
}

// lines returns a copy of the kept lines, oldest first, including an
// unterminated last line.
func (t *tailBuffer) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.buf...)
	if p := strings.TrimSpace(t.partial.String()); p != "" {
		out = append(out, p)
	}
	return out
}

// lineLogger is an io.Writer for a plugin's synced stdout or stderr: it
// logs each complete line at info level and copies it into tail.
type lineLogger struct {
	log    hclog.Logger
	tail   *tailBuffer
	stream string

	mu      sync.Mutex
	partial []byte
}

// Write implements io.Writer; it never fails.
func (l *lineLogger) Write(p []byte) (int, error) {
	_, _ = l.tail.Write(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := strings.IndexByte(string(l.partial), '\n')
		if i < 0 {
			if len(l.partial) > 64<<10 { // an endless line: flush it
				l.log.Info(string(l.partial), "stream", l.stream)
				l.partial = l.partial[:0]
			}
			return len(p), nil
		}
		if line := strings.TrimRight(string(l.partial[:i]), "\r"); line != "" {
			l.log.Info(line, "stream", l.stream)
		}
		l.partial = l.partial[i+1:]
	}
}
