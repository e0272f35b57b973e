package supervise

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// syncBuffer is a bytes.Buffer safe for the logger and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A plugin flooding stderr gets logBurst lines logged at once, then a
// warning with the number dropped; the tail still holds the newest lines.
func TestLineLoggerRateLimitsAFlood(t *testing.T) {
	out := &syncBuffer{}
	log := hclog.New(&hclog.LoggerOptions{Output: out, Level: hclog.Trace, Color: hclog.ColorOff})
	tail := NewTailBuffer(3)
	l := &LineLogger{Log: log, Tail: tail, Stream: "stderr", Level: hclog.Debug}
	var flood strings.Builder
	for i := 0; i < 5*logBurst; i++ {
		flood.WriteString("[INFO] line\n")
	}
	flood.WriteString("last\n")
	_, _ = l.Write([]byte(flood.String()))
	logged := strings.Count(out.String(), "line")
	if logged < logBurst || logged > logBurst+logBurst/10 {
		t.Errorf("%d of %d lines logged at once, want about the burst %d", logged, 5*logBurst+1, logBurst)
	}
	if got := tail.Lines(); len(got) != 3 || got[2] != "last" {
		t.Errorf("tail = %q", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "plugin log lines dropped") {
		if time.Now().After(deadline) {
			t.Fatalf("no dropped-lines warning:\n%s", out.String()[max(0, len(out.String())-500):])
		}
		time.Sleep(5 * time.Millisecond)
		_, _ = l.Write([]byte("[WARN] again\n"))
	}
	if !strings.Contains(out.String(), "[WARN]  plugin log lines dropped: over the rate limit: stream=stderr dropped=") {
		t.Errorf("warning line: %s", out.String()[strings.Index(out.String(), "plugin log lines dropped")-30:])
	}
}

// A line longer than maxLogLineLen, written in pieces, is logged once,
// cut, saying how many bytes were cut.
func TestLineLoggerCutsLongLines(t *testing.T) {
	out := &syncBuffer{}
	log := hclog.New(&hclog.LoggerOptions{Output: out, Level: hclog.Trace, Color: hclog.ColorOff})
	l := &LineLogger{Log: log, Tail: NewTailBuffer(3), Stream: "stderr"}
	for i := 0; i < 100; i++ {
		_, _ = l.Write(bytes.Repeat([]byte("x"), 1024))
	}
	_, _ = l.Write([]byte("\nshort\n"))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], fmt.Sprintf("[%d bytes cut]", 100*1024-maxLogLineLen)) || len(lines[0]) > maxLogLineLen+200 || !strings.Contains(lines[1], "short") {
		t.Errorf("%d lines; first %d bytes: %.80s … %s", len(lines), len(lines[0]), lines[0], lines[0][max(0, len(lines[0])-60):])
	}
}

// parseLogLine takes hclog JSON with string members, [LEVEL] prefixes, and
// anything else as a plain line, never panicking.
func TestParseLogLine(t *testing.T) {
	for _, c := range []struct {
		line  string
		level hclog.Level
		msg   string
		args  int
	}{
		{`{"@level":"error","@message":"m","b":1,"a":"x"}`, hclog.Error, "m", 4},
		{`{"@message":"m"}`, hclog.NoLevel, "m", 0},
		{`{"@message":1,"@level":"error"}`, hclog.NoLevel, `{"@message":1,"@level":"error"}`, 0},
		{`{"@message":"m","@level":7}`, hclog.NoLevel, "m", 0},
		{`{broken`, hclog.NoLevel, `{broken`, 0},
		{`[WARN] careful`, hclog.Warn, "careful", 0},
		{`[TRACE]x`, hclog.Trace, "x", 0},
		{`plain`, hclog.NoLevel, "plain", 0},
	} {
		level, msg, args := parseLogLine(c.line)
		if level != c.level || msg != c.msg || len(args) != c.args {
			t.Errorf("parseLogLine(%q) = %v %q %v, want %v %q %d args", c.line, level, msg, args, c.level, c.msg, c.args)
		}
	}
}
