package supervise

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/discover"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// Fixtures of the lifecycle table: files, instances (no processes: next
// only reads their fields) and lives reached by running next itself.
var (
	testPolicy = core.RestartPolicy{MaxFailures: 3, ResetAfter: 10 * time.Second}

	f1 = discover.FileRef{Path: "/plugins/opentool-plugin-x", Stamp: discover.FileStamp{Size: 1}}
	f2 = discover.FileRef{Path: "/plugins/opentool-plugin-x", Stamp: discover.FileStamp{Size: 2}, Sum: "sum2"}
	f3 = discover.FileRef{Path: "/plugins/opentool-plugin-x", Stamp: discover.FileStamp{Size: 3}, Sum: "sum3"}
	// remote declares a server reached by URL (FileRef.Remote).
	remote  = discover.FileRef{Path: "/plugins/remote.mcp.json", Stamp: discover.FileStamp{Size: 4}, Launch: `{"name":"remote","dir":"/plugins","server":{"url":"http://127.0.0.1:1/mcp"}}`}
	touched = discover.FileRef{Path: "/plugins/opentool-plugin-x", Stamp: discover.FileStamp{Size: 1, ModTime: time.Unix(9, 0)}, Sum: "sum1"}

	docA = &opentool.OpenTool{Functions: []opentool.Function{{Name: "a"}}}
	docB = &opentool.OpenTool{Functions: []opentool.Function{{Name: "b"}}}
	i1   = &instance{sum: "sum1", doc: docA}
	i2   = &instance{sum: "sum2", doc: docB}
	i3   = &instance{sum: "sum1", doc: docA}
)

// run feeds events to l through next and returns the final life.
func run(l life, evs ...event) life {
	for _, ev := range evs {
		l, _ = next(l, ev)
	}
	return l
}

// crash is an unasked exit of inst after up.
func crash(inst *instance, up time.Duration) evExited {
	return evExited{inst: inst, up: up, pid: 42, status: "exit status 2"}
}

// show renders actions as short words for the table.
func show(acts []action) []string {
	out := []string{}
	for _, a := range acts {
		out = append(out, showAction(a))
	}
	return out
}

// showAction renders one action ("start#2 size=2", "drain sum1", "log ERROR plugin crashed").
func showAction(a action) string {
	switch a := a.(type) {
	case actStart:
		return fmt.Sprintf("start#%d size=%d", a.attempt, a.file.Stamp.Size)
	case actStop:
		return "stop " + a.inst.sum + inst3(a.inst)
	case actDrain:
		return "drain " + a.inst.sum + inst3(a.inst)
	case actWatch:
		return "watch " + a.inst.sum + inst3(a.inst)
	case actBackoff:
		if a.remote {
			return fmt.Sprintf("backoff#%d failures=%d remote", a.timer, a.failures)
		}
		return fmt.Sprintf("backoff#%d failures=%d", a.timer, a.failures)
	case actCancelBackoff:
		return "cancel backoff"
	case actPublish:
		return "publish"
	case actChanged:
		return "changed"
	case actLog:
		if a.msg == "plugin state" {
			return fmt.Sprintf("state %v→%v", a.kv[1], a.kv[3])
		}
		msg, _, _ := strings.Cut(a.msg, ";")
		return "log " + strings.ToUpper(a.level.String()) + " " + msg
	}
	return fmt.Sprintf("%T", a)
}

// inst3 tells i3 (same binary as i1, a later process) from i1.
func inst3(inst *instance) string {
	if inst == i3 {
		return "'"
	}
	return ""
}

// lifeCase is one (state, event) pair of the lifecycle and its outcome.
type lifeCase struct {
	name  string
	from  life
	ev    event
	state core.State
	acts  []string
	check func(t *testing.T, l life) // further checks, may be nil
}

func TestLifecycleTable(t *testing.T) {
	fresh := newLife(testPolicy)
	starting := run(fresh, evFile{f1})                                   // start#1 in flight
	ready := run(starting, evStarted{1, i1})                             // i1 serves f1
	failed := run(starting, evStartFailed{attempt: 1, err: "boom"})      // first start failed
	replacing := run(ready, evFile{f2})                                  // start#2 (f2) beside i1
	restarting := run(ready, crash(i1, time.Second))                     // failures 1, backoff#2
	restarting2 := run(restarting, evBackoff{2})                         // start#3 (f1)
	twice := run(restarting2, evStarted{3, i3})                          // ready again, failures 1
	twiceFailed := run(restarting2, evStartFailed{attempt: 3, err: "x"}) // failures 2, backoff#4
	draining := run(ready, evRemoved{})                                  // draining i1
	stopped := run(draining, evDrained{i1})
	queued := run(starting, evFile{f2})                          // f2 waits for start#1
	crashLoop := run(twice, crash(i3, time.Second))              // failures 2, backoff#4
	readyAgain := run(crashLoop, evBackoff{4}, evStarted{5, i1}) // failures 2
	// A server reached by URL: up, then lost MaxFailures-1 times in a row.
	remoteReady := run(fresh, evFile{remote}, evStarted{1, i1})
	remoteLost := run(remoteReady, crash(i1, time.Second), evBackoff{2}, evStartFailed{attempt: 3, err: "refused"}, evBackoff{4}) // failures 2, start#5

	for _, c := range []lifeCase{
		// A plugin just found.
		{"found: first start", fresh, evFile{f1}, core.StateStarting, []string{"start#1 size=1"}, nil},

		// starting (start#1 in flight)
		{"starting: start succeeded", starting, evStarted{1, i1}, core.StateReady,
			[]string{"publish", "changed", "state starting→ready", "watch sum1", "log INFO plugin ready"}, nil},
		{"starting: first start failed is failed at once", starting, evStartFailed{attempt: 1, err: "boom"}, core.StateFailed,
			[]string{"publish", "changed", "state starting→failed", "log ERROR plugin failed to start"},
			func(t *testing.T, l life) { wantEq(t, "lastErr", l.lastErr, "boom") }},
		{"starting: same file again (rescan)", starting, evFile{f1}, core.StateStarting, []string{}, nil},
		{"starting: newer file is queued", starting, evFile{f2}, core.StateStarting, []string{},
			func(t *testing.T, l life) { wantEq(t, "queued", *l.queued, f2) }},
		{"starting: removed stops at once", starting, evRemoved{}, core.StateStopped,
			[]string{"publish", "changed", "state starting→stopped", "log INFO plugin removed"},
			func(t *testing.T, l life) { wantEq(t, "starting", l.starting, 0) }},
		{"starting: closing stops at once", starting, evClosing{}, core.StateStopped,
			[]string{"publish", "changed", "state starting→stopped", "log INFO plugin start cancelled by the host's shutdown"}, nil},
		{"starting: stale start result is stopped", starting, evStarted{7, i2}, core.StateStarting, []string{"stop sum2"}, nil},
		{"starting: stale start failure is ignored", starting, evStartFailed{attempt: 7, err: "x"}, core.StateStarting, []string{}, nil},
		{"starting: stray backoff ignored", starting, evBackoff{1}, core.StateStarting, []string{}, nil},

		// queued: start#1 in flight, f2 seen meanwhile
		{"queued: start ends, queued file replaces", queued, evStarted{1, i1}, core.StateReady,
			[]string{"publish", "changed", "state starting→ready", "watch sum1", "log INFO plugin ready", "start#2 size=2"}, nil},
		{"queued: start fails, queued file retried", queued, evStartFailed{attempt: 1, err: "boom"}, core.StateStarting,
			[]string{"publish", "log ERROR plugin failed to start", "start#2 size=2"}, nil},

		// ready (i1 serves f1)
		{"ready: unchanged file (rescan)", ready, evFile{f1}, core.StateReady, []string{}, nil},
		{"ready: touched, same sha256: not restarted", ready, evFile{touched}, core.StateReady,
			[]string{"log DEBUG plugin file touched"},
			func(t *testing.T, l life) { wantEq(t, "file", l.file, touched); wantEq(t, "inst", l.inst, i1) }},
		{"ready: changed file starts blue/green", ready, evFile{f2}, core.StateReady, []string{"start#2 size=2"},
			func(t *testing.T, l life) { wantEq(t, "inst", l.inst, i1) }},
		{"ready: crash restarts with backoff", ready, crash(i1, time.Second), core.StateRestarting,
			[]string{"publish", "changed", "state ready→restarting", "stop sum1", "log ERROR plugin crashed", "backoff#2 failures=1"},
			func(t *testing.T, l life) {
				wantEq(t, "failures", l.failures, 1)
				wantEq(t, "restarts", l.restarts, 1)
				wantEq(t, "lastErr", l.lastErr, "plugin exited (pid 42, exit status 2)")
				wantEq(t, "doc kept", l.doc, docA)
			}},
		{"ready: asked exit is no crash", ready, evExited{inst: i1, asked: true}, core.StateReady, []string{}, nil},
		{"ready: changed document served, no restart", ready, evReloaded{inst: i1, doc: docB}, core.StateReady,
			[]string{"changed", "log INFO plugin document changed"},
			func(t *testing.T, l life) { wantEq(t, "doc", l.doc, docB); wantEq(t, "inst", l.inst, i1) }},
		{"ready: document change of another process dropped", replacing, evReloaded{inst: i2, doc: docB}, core.StateReady, []string{},
			func(t *testing.T, l life) { wantEq(t, "doc", l.doc, docA) }},
		{"ready: exit of another process ignored", ready, crash(i2, 0), core.StateReady, []string{}, nil},
		{"ready: crash after ResetAfter up clears the count", twice, crash(i3, time.Minute), core.StateRestarting,
			[]string{"publish", "changed", "state ready→restarting", "stop sum1'", "log ERROR plugin crashed", "backoff#4 failures=1"}, nil},
		{"ready: MaxFailures-th crash in a row is a crash loop", readyAgain, crash(i1, time.Second), core.StateFailed,
			[]string{"publish", "changed", "state ready→failed", "stop sum1", "log ERROR plugin crashed", "log ERROR plugin failed"},
			func(t *testing.T, l life) {
				wantEq(t, "lastErr", l.lastErr, "crash loop: 3 failures in a row; last: plugin exited (pid 42, exit status 2)")
			}},
		{"ready: removed drains", ready, evRemoved{}, core.StateDraining,
			[]string{"publish", "changed", "state ready→draining", "log INFO plugin removed", "drain sum1"}, nil},
		{"ready: closing drains", ready, evClosing{}, core.StateDraining,
			[]string{"publish", "changed", "state ready→draining", "log INFO host closing", "drain sum1"}, nil},
		{"ready: stray drained ignored", ready, evDrained{i1}, core.StateReady, []string{}, nil},

		// replacing (ready, start#2 of f2 beside i1)
		{"replacing: new binary up: switch, drain old", replacing, evStarted{2, i2}, core.StateReady,
			[]string{"publish", "changed", "watch sum2", "drain sum1", "log INFO plugin replaced"},
			func(t *testing.T, l life) {
				wantEq(t, "inst", l.inst, i2)
				wantEq(t, "doc", l.doc, docB)
				wantEq(t, "file", l.file, f2)
			}},
		{"replacing: bad binary: old keeps serving", replacing, evStartFailed{attempt: 2, err: "handshake"}, core.StateReady,
			[]string{"publish", "log ERROR new plugin binary rejected"},
			func(t *testing.T, l life) {
				wantEq(t, "inst", l.inst, i1)
				wantEq(t, "file", l.file, f2) // not retried until it changes again
				wantEq(t, "lastErr", l.lastErr, "handshake")
			}},
		{"replacing: rejected file not retried on rescan", run(replacing, evStartFailed{attempt: 2, err: "x"}), evFile{f2}, core.StateReady, []string{}, nil},
		{"replacing: newer file queued", replacing, evFile{f3}, core.StateReady, []string{},
			func(t *testing.T, l life) { wantEq(t, "queued", *l.queued, f3) }},
		{"replacing: crash: the replacement is the restart", replacing, crash(i1, time.Second), core.StateRestarting,
			[]string{"publish", "changed", "state ready→restarting", "stop sum1", "log ERROR plugin crashed"}, nil},
		{"replacing: MaxFailures-th crash: the start in flight decides", run(readyAgain, evFile{f2}), crash(i1, time.Second), core.StateRestarting,
			[]string{"publish", "changed", "state ready→restarting", "stop sum1", "log ERROR plugin crashed"},
			func(t *testing.T, l life) { wantEq(t, "failures", l.failures, 3) }},
		{"replacing, crash loop: the replacement fails: failed", run(readyAgain, evFile{f2}, crash(i1, time.Second)), evStartFailed{attempt: 6, err: "bad"}, core.StateFailed,
			[]string{"publish", "changed", "state restarting→failed", "log ERROR plugin restart failed", "log ERROR plugin failed"}, nil},
		{"replacing, crash loop: the replacement is up: ready, count cleared", run(readyAgain, evFile{f2}, crash(i1, time.Second)), evStarted{6, i2}, core.StateReady,
			[]string{"publish", "changed", "state restarting→ready", "watch sum2", "log INFO plugin replaced"},
			func(t *testing.T, l life) { wantEq(t, "failures", l.failures, 0) }},
		{"replacing: removed: drain, forget the start", replacing, evRemoved{}, core.StateDraining,
			[]string{"publish", "changed", "state ready→draining", "log INFO plugin removed", "drain sum1"},
			func(t *testing.T, l life) { wantEq(t, "starting", l.starting, 0) }},
		{"replacing, removed: late start is stopped", run(replacing, evRemoved{}), evStarted{2, i2}, core.StateDraining, []string{"stop sum2"}, nil},

		// restarting (i1 crashed, failures 1, backoff#2 armed)
		{"restarting: backoff fired: restart", restarting, evBackoff{2}, core.StateRestarting, []string{"start#3 size=1"}, nil},
		{"restarting: stale backoff ignored", restarting, evBackoff{1}, core.StateRestarting, []string{}, nil},
		{"restarting: unchanged file (rescan)", restarting, evFile{f1}, core.StateRestarting, []string{}, nil},
		{"restarting: changed file starts now", restarting, evFile{f2}, core.StateRestarting, []string{"cancel backoff", "start#3 size=2"}, nil},
		{"restarting: dead process exits again: ignored", restarting, crash(i1, 0), core.StateRestarting, []string{}, nil},
		{"restarting: removed stops at once", restarting, evRemoved{}, core.StateStopped,
			[]string{"publish", "changed", "state restarting→stopped", "cancel backoff", "log INFO plugin removed"}, nil},
		{"restarting: restart up (failures kept)", restarting2, evStarted{3, i3}, core.StateReady,
			[]string{"publish", "changed", "state restarting→ready", "watch sum1'", "log INFO plugin restarted"},
			func(t *testing.T, l life) { wantEq(t, "failures", l.failures, 1) }},
		{"restarting: restart failed: longer backoff", restarting2, evStartFailed{attempt: 3, err: "x"}, core.StateRestarting,
			[]string{"publish", "log ERROR plugin restart failed", "backoff#4 failures=2"}, nil},
		{"restarting: MaxFailures-th failed restart is a crash loop", run(twiceFailed, evBackoff{4}), evStartFailed{attempt: 5, err: "y"}, core.StateFailed,
			[]string{"publish", "changed", "state restarting→failed", "log ERROR plugin restart failed", "log ERROR plugin failed"},
			func(t *testing.T, l life) {
				wantEq(t, "lastErr", l.lastErr, "crash loop: 3 failures in a row; last: y")
			}},

		// a server reached by URL (remote): never failed, backoff capped
		{"remote: session lost: restarting, remote backoff, the adapter's reason", remoteReady, crash(i1, time.Second), core.StateRestarting,
			[]string{"publish", "changed", "state ready→restarting", "stop sum1", "log ERROR remote MCP server lost", "backoff#2 failures=1 remote"},
			func(t *testing.T, l life) {
				wantEq(t, "lastErr", l.lastErr, "exit status 2")
				wantEq(t, "doc kept", l.doc, docA)
			}},
		{"remote: MaxFailures-th failed try is no crash loop: backoff again", remoteLost, evStartFailed{attempt: 5, err: "refused"}, core.StateRestarting,
			[]string{"log ERROR plugin restart failed", "backoff#6 failures=3 remote"},
			func(t *testing.T, l life) { wantEq(t, "failures", l.failures, 3); wantEq(t, "doc kept", l.doc, docA) }},
		{"remote: down at its first start: restarting with the remote backoff, not failed", run(fresh, evFile{remote}), evStartFailed{attempt: 1, err: "refused"}, core.StateRestarting,
			[]string{"publish", "changed", "state starting→restarting", "log ERROR remote MCP server unreachable", "backoff#2 failures=1 remote"},
			func(t *testing.T, l life) {
				wantEq(t, "lastErr", l.lastErr, "refused")
				wantEq(t, "no doc", l.doc == nil, true)
			}},
		{"remote: down at its first start, then up: ready", run(fresh, evFile{remote}, evStartFailed{attempt: 1, err: "refused"}, evBackoff{2}), evStarted{3, i1}, core.StateReady,
			[]string{"publish", "changed", "state restarting→ready", "watch sum1", "log INFO plugin restarted"}, nil},
		{"remote: back: ready, same document", run(remoteLost, evStartFailed{attempt: 5, err: "refused"}, evBackoff{6}), evStarted{7, i3}, core.StateReady,
			[]string{"publish", "changed", "state restarting→ready", "watch sum1'", "log INFO plugin restarted"}, nil},

		// failed
		{"failed: rescan retries the same file", failed, evFile{f1}, core.StateStarting,
			[]string{"publish", "changed", "state failed→starting", "start#2 size=1"}, nil},
		{"failed: changed file retried", failed, evFile{f2}, core.StateStarting,
			[]string{"publish", "changed", "state failed→starting", "start#2 size=2"}, nil},
		{"failed: crash loop retried with a fresh count", run(readyAgain, crash(i1, time.Second)), evFile{f1}, core.StateStarting,
			[]string{"publish", "changed", "state failed→starting", "start#6 size=1"},
			func(t *testing.T, l life) { wantEq(t, "failures", l.failures, 0); wantEq(t, "doc kept", l.doc, docA) }},
		{"failed: retry fails again", run(failed, evFile{f1}), evStartFailed{attempt: 2, err: "again"}, core.StateFailed,
			[]string{"publish", "changed", "state starting→failed", "log ERROR plugin failed to start"}, nil},
		{"failed: removed stops", failed, evRemoved{}, core.StateStopped,
			[]string{"publish", "changed", "state failed→stopped", "log INFO plugin removed"}, nil},
		{"failed: stray backoff ignored", failed, evBackoff{2}, core.StateFailed, []string{}, nil},

		// draining (i1)
		{"draining: drained: stopped", draining, evDrained{i1}, core.StateStopped,
			[]string{"publish", "changed", "state draining→stopped"}, nil},
		{"draining: other process drained: ignored", draining, evDrained{i2}, core.StateDraining, []string{}, nil},
		{"draining: exit during drain is no crash", draining, crash(i1, 0), core.StateDraining, []string{}, nil},
		{"draining: document change dropped", draining, evReloaded{inst: i1, doc: docB}, core.StateDraining, []string{}, nil},
		{"draining: file ignored", draining, evFile{f2}, core.StateDraining, []string{}, nil},
		{"draining: removed again ignored", draining, evRemoved{}, core.StateDraining, []string{}, nil},
		{"draining: closing ignored", draining, evClosing{}, core.StateDraining, []string{}, nil},

		// stopped
		{"stopped: file ignored", stopped, evFile{f1}, core.StateStopped, []string{}, nil},
		{"stopped: late start result is stopped", stopped, evStarted{1, i2}, core.StateStopped, []string{"stop sum2"}, nil},
		{"stopped: closing ignored", stopped, evClosing{}, core.StateStopped, []string{}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, acts := next(c.from, c.ev)
			if got.state != c.state {
				t.Errorf("state = %s, want %s", got.state, c.state)
			}
			if s := show(acts); !slices.Equal(s, c.acts) {
				t.Errorf("actions\n got %q\nwant %q", s, c.acts)
			}
			if c.check != nil {
				c.check(t, got)
			}
			again, acts2 := next(c.from, c.ev)
			if !reflect.DeepEqual(got, again) || !reflect.DeepEqual(acts, acts2) {
				t.Error("next is not a function of its inputs")
			}
		})
	}
}

// wantEq fails t when got != want.
func wantEq[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// TestLifecycleViewFollowsEveryChange checks the view rule of next: a
// publish whenever the state, the serving process or the reason changes,
// never otherwise, over a whole life.
func TestLifecycleViewFollowsEveryChange(t *testing.T) {
	l := newLife(testPolicy)
	for _, ev := range []event{
		evFile{f1}, evStarted{1, i1}, evFile{f1}, evFile{f2}, evStartFailed{attempt: 2, err: "bad"},
		evFile{f3}, evStarted{3, i2}, crash(i2, time.Second), evBackoff{4}, evStartFailed{attempt: 5, err: "x"},
		evBackoff{6}, evStarted{7, i3}, evFile{touched}, evRemoved{}, evDrained{i3},
	} {
		before := l
		var acts []action
		l, acts = next(l, ev)
		changed := l.state != before.state || l.inst != before.inst || l.lastErr != before.lastErr
		published := slices.ContainsFunc(acts, func(a action) bool { _, ok := a.(actPublish); return ok })
		if changed != published {
			t.Fatalf("%T: view changed %v but published %v (%q)", ev, changed, published, show(acts))
		}
		if published {
			if _, ok := acts[0].(actPublish); !ok {
				t.Fatalf("%T: publish is not the first action: %q", ev, show(acts))
			}
		}
	}
	if l.state != core.StateStopped {
		t.Fatalf("state = %s, want stopped", l.state)
	}
}
