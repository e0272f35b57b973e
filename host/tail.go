package host

import (
	"strings"
	"sync"
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
