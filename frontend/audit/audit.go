// Package audit writes one JSON line per call (--audit-log FILE): who
// called what, through which front end, how long it took and how it ended,
// with argument and result sizes. It never writes argument or result
// values.
//
//	{"time":"2026-11-23T06:40:01.123456789Z","key":"ci","front_end":"opentool","function":"add",
//	 "plugin":"calculator","duration_ms":0.61,"outcome":"ok","arg_bytes":13,"result_bytes":12,"items":1}
//
// Writing never slows a call: lines go through a buffered channel
// (BufferLines) to one writer goroutine; when the disk falls that far
// behind, lines are dropped and counted (Dropped), never waited for.
package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/core"
)

// BufferLines is how many lines may wait for the writer.
const BufferLines = 4096

// maxFunction caps a logged function name, bytes.
const maxFunction = 128

// Line is one audit line.
type Line struct {
	Time time.Time `json:"time"`
	Key  string    `json:"key,omitempty"`
	// Principal is the OAuth access token's caller (issuer, sub,
	// client_id) when the call came with a token; Key is then its
	// principal name, oauth:SUB@ISSUER (access.Principal).
	Principal *access.Principal `json:"principal,omitempty"`
	FrontEnd  string            `json:"front_end,omitempty"`
	// Run links a run_code call and its program's inner calls: the same
	// id on each (core.Caller.Run; omitted otherwise).
	Run         string  `json:"run,omitempty"`
	Function    string  `json:"function"`
	Plugin      string  `json:"plugin,omitempty"`
	DurationMS  float64 `json:"duration_ms"`
	Outcome     string  `json:"outcome"`
	ArgBytes    int     `json:"arg_bytes"`
	ResultBytes int64   `json:"result_bytes"`
	Items       int     `json:"items"`
}

// Log is an open audit log.
type Log struct {
	ch      chan Line
	dropped atomic.Int64
	done    chan struct{}
	closer  io.Closer
}

// Open opens path for appending (created 0600 when missing); "-" is
// stderr. Errors: the file cannot be opened.
func Open(path string) (*Log, error) {
	var w io.WriteCloser = nopCloser{os.Stderr}
	if path != "-" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		w = f
	}
	l := &Log{ch: make(chan Line, BufferLines), done: make(chan struct{}), closer: w}
	go l.write(w)
	return l, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// write writes lines until Close, flushing whenever the channel is empty.
func (l *Log) write(w io.Writer) {
	defer close(l.done)
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for line := range l.ch {
		_ = enc.Encode(line)
		if len(l.ch) == 0 {
			_ = bw.Flush()
		}
	}
	_ = bw.Flush()
}

// Observe queues the line of one finished call; plug it into
// core.Config.OnCall. It never blocks: a full buffer drops the line.
func (l *Log) Observe(ctx context.Context, r core.CallRecord) {
	outcome := "ok"
	if r.Kind != "" {
		outcome = string(r.Kind)
	}
	fn := r.Function
	if len(fn) > maxFunction { // the caller's to choose when no plugin serves it
		fn = fn[:maxFunction] + "…"
	}
	line := Line{Time: r.Start.UTC(), Key: r.Caller.Key, FrontEnd: r.Caller.FrontEnd, Run: r.Caller.Run, Function: fn, Plugin: r.Plugin,
		DurationMS: float64(r.Duration.Microseconds()) / 1000, Outcome: outcome, ArgBytes: r.ArgBytes, ResultBytes: r.ResultBytes, Items: r.Items,
		Principal: access.GrantFrom(ctx).Principal()}
	select {
	case l.ch <- line:
	default:
		l.dropped.Add(1)
	}
}

// Dropped is how many lines were dropped because the writer fell behind.
func (l *Log) Dropped() int64 { return l.dropped.Load() }

// Close writes the queued lines and closes the file. Observe must not be
// called after Close.
func (l *Log) Close() error {
	close(l.ch)
	<-l.done
	return l.closer.Close()
}
