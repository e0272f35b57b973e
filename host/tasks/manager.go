package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Defaults of Config.
const (
	// DefaultAfter is the command line's --task-after: how long a call
	// that allows a task runs before it becomes one (Config.After has no
	// default: zero means at once).
	DefaultAfter            = time.Second
	DefaultTTL              = 15 * time.Minute
	DefaultPollInterval     = time.Second
	DefaultLease            = 10 * time.Second
	DefaultMaxPerOwner      = 100
	DefaultMaxBytesPerOwner = 64 << 20
)

// Config configures a Manager. Zero fields take the defaults.
type Config struct {
	// Store keeps the records. Default: a new MemoryStore.
	Store Store
	// Replica names this Manager in records (Record.Replica) and in the
	// message of a task failed because its replica died. Default: a
	// random id.
	Replica string
	// TTL is how long a task is kept after it is created (--task-ttl).
	// Default DefaultTTL.
	TTL time.Duration
	// PollInterval is the polling interval suggested to clients. Default
	// DefaultPollInterval.
	PollInterval time.Duration
	// Lease is how long a running task's lease lasts; it is renewed every
	// Lease/3 while the call runs, and a cancel requested on another
	// replica is seen at the next renewal. A working task whose lease is
	// over is failed. Default DefaultLease.
	Lease time.Duration
	// MaxPerOwner caps the unexpired tasks one owner holds. Default
	// DefaultMaxPerOwner.
	MaxPerOwner int
	// MaxBytesPerOwner caps the bytes of results and errors one owner's
	// unexpired tasks hold. Default DefaultMaxBytesPerOwner (64 MiB).
	MaxBytesPerOwner int64
	// After is how long a call that allows a task (the client opted in)
	// runs before StartAfter turns it into one; a call that ends sooner is
	// answered as if tasks did not exist (--task-after). Unlike the other
	// fields, zero is meaningful and is not replaced by a default: every
	// such call becomes a task at once. The command line's default is
	// DefaultAfter.
	After time.Duration
	// Logger logs tasks whose state could not be stored. Default: none.
	Logger hclog.Logger
}

// Manager runs calls as tasks and answers for the tasks of its Store.
type Manager struct {
	cfg Config

	mu      sync.Mutex
	running map[string]context.CancelCauseFunc // task id → cancel of its call, on this replica
	inputs  map[string]*inputWaits             // task id → its call's requests waiting for the client (input.go)
	wg      sync.WaitGroup
	closed  bool
	stop    chan struct{}

	watchMu  sync.Mutex
	watchers map[*func(Record)]struct{} // Watch's functions
}

// NewManager returns a Manager of cfg and starts its lease renewal.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.Store == nil {
		cfg.Store = NewMemoryStore()
	}
	if cfg.Replica == "" {
		id, err := newID()
		if err != nil {
			return nil, err
		}
		cfg.Replica = id[:12]
	}
	cfg.TTL = orDefault(cfg.TTL, DefaultTTL)
	cfg.PollInterval = orDefault(cfg.PollInterval, DefaultPollInterval)
	cfg.Lease = orDefault(cfg.Lease, DefaultLease)
	cfg.MaxPerOwner = orDefault(cfg.MaxPerOwner, DefaultMaxPerOwner)
	cfg.MaxBytesPerOwner = orDefault(cfg.MaxBytesPerOwner, DefaultMaxBytesPerOwner)
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	m := &Manager{cfg: cfg, running: map[string]context.CancelCauseFunc{}, stop: make(chan struct{})}
	m.wg.Add(1)
	go m.renewLoop()
	return m, nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// The causes of a task's cancellation, its status message when it ends
// cancelled.
var (
	// ErrCancelled: Cancel was asked for the task (on any replica).
	ErrCancelled = errors.New("cancelled at the client's request")
	// ErrClosed: the Manager running the call closed (the host shut
	// down) before the call ended.
	ErrClosed = errors.New("cancelled: the host running the call shut down before it ended")
	// errEndedElsewhere: another replica ended the task (failed it when
	// this replica's lease ran out): the call here is of no use any more.
	errEndedElsewhere = errors.New("cancelled: the task was ended by another replica (its lease had run out)")
)

// RPCError is a call's JSON-RPC error (extension, "Task Execution
// Errors"): a run that returns one fails its task with it.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error implements error.
func (e *RPCError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

// Run is a call run as a task. It returns the call's result (completed),
// or an *RPCError (failed with it); any other error fails the task with
// -32603 and the error's text. ctx is cancelled when the task is
// cancelled or the Manager closes.
type Run func(ctx context.Context) (json.RawMessage, error)

// After is Config.After: how long a call that allows a task runs before
// it becomes one (0: at once).
func (m *Manager) After() time.Duration { return m.cfg.After }

// Replica is Config.Replica: the name of this Manager in the records of
// the tasks it runs (Record.Replica).
func (m *Manager) Replica() string { return m.cfg.Replica }

// Start is StartFrom with no Origin.
func (m *Manager) Start(ctx context.Context, owner string, run Run) (Record, error) {
	return m.StartFrom(ctx, owner, Origin{}, run)
}

// StartFrom creates a task of owner whose call came from origin, and runs
// run for it on this replica, detached from ctx: run's context carries
// ctx's values (the caller's identity, trace span) but not its
// cancellation or deadline, and ctx bounds only the creation. It returns
// the record as created, once it is stored (extension, "Task Creation":
// a Get of its id on any replica finds it). Errors: ErrLimit when owner
// is at Config.MaxPerOwner tasks or Config.MaxBytesPerOwner bytes, a
// closed Manager, or the store's.
func (m *Manager) StartFrom(ctx context.Context, owner string, origin Origin, run Run) (Record, error) {
	n, bytes, err := m.cfg.Store.Usage(ctx, owner)
	if err != nil {
		return Record{}, err
	}
	if n >= m.cfg.MaxPerOwner || bytes >= m.cfg.MaxBytesPerOwner {
		return Record{}, fmt.Errorf("%w: %d tasks holding %d bytes (at most %d tasks and %d bytes)", ErrLimit, n, bytes, m.cfg.MaxPerOwner, m.cfg.MaxBytesPerOwner)
	}
	id, err := newID()
	if err != nil {
		return Record{}, err
	}
	now := time.Now().UTC()
	rec := Record{ID: id, Owner: owner, Status: Working, CreatedAt: now, LastUpdatedAt: now,
		TTL: m.cfg.TTL, PollInterval: m.cfg.PollInterval, Replica: m.cfg.Replica, LeaseUntil: now.Add(m.cfg.Lease),
		Origin: origin}
	callCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		cancel(nil)
		return Record{}, errors.New("task manager is closed")
	}
	m.running[id] = cancel
	m.wg.Add(1)
	m.mu.Unlock()
	if err := m.cfg.Store.Create(ctx, rec); err != nil {
		m.forget(id)
		cancel(nil)
		m.wg.Done()
		return Record{}, err
	}
	go m.execute(callCtx, cancel, rec, run)
	return rec, nil
}

// StartAfter runs a call that allows a task (the client opted in) and
// turns it into one if it has not ended within after (Config.After, or
// what the client asked for): the extension's server-directed creation
// ("Capability Negotiation": the server decides per request).
//
// run starts at once with a context that carries ctx's values; until the
// call becomes a task, ctx's end (the client went away) cancels it, as
// for a call without a task. When run ends within after, StartAfter
// returns what it returned (result, nil, err) and no task exists. Else it
// creates a task of owner (StartFrom) that takes the running call over,
// detached from ctx, and returns (nil, &record, nil) once the task is
// stored; the call's outcome goes to the task (completed with the
// result, failed with an *RPCError, cancelled by Cancel).
//
// When the task cannot be created (ErrLimit, the store failing),
// StartAfter logs why and waits for the call as if tasks did not exist,
// returning its outcome: a client that allows a task must take a plain
// answer too.
func (m *Manager) StartAfter(ctx context.Context, owner string, origin Origin, after time.Duration, run Run) (json.RawMessage, *Record, error) {
	callCtx, cancelCall := context.WithCancel(context.WithoutCancel(ctx))
	type ended struct {
		result json.RawMessage
		err    error
	}
	done := make(chan ended, 1)
	go func() {
		r, err := run(callCtx)
		done <- ended{r, err}
	}()
	// wait waits for the call bound to ctx again (the answer is plain).
	wait := func() (json.RawMessage, *Record, error) {
		stop := context.AfterFunc(ctx, cancelCall)
		defer stop()
		o := <-done
		cancelCall()
		return o.result, nil, o.err
	}
	follow := context.AfterFunc(ctx, cancelCall) // the request's end ends the call, until it is a task
	if after > 0 {
		t := time.NewTimer(after)
		defer t.Stop()
		select {
		case o := <-done:
			follow()
			cancelCall()
			return o.result, nil, o.err
		case <-t.C:
		}
	}
	if !follow() { // ctx ended meanwhile and cancelled the call
		return wait()
	}
	if after > 0 { // with 0 a call is always a task, however fast it ends
		select {
		case o := <-done: // ended just now: no task needed
			cancelCall()
			return o.result, nil, o.err
		default:
		}
	}
	rec, err := m.StartFrom(ctx, owner, origin, func(taskCtx context.Context) (json.RawMessage, error) {
		stop := context.AfterFunc(taskCtx, cancelCall) // Cancel, or the Manager closing
		defer stop()
		o := <-done
		cancelCall()
		return o.result, o.err
	})
	if err != nil {
		m.cfg.Logger.Warn("call not turned into a task: answering it when it ends", "owner", owner, "function", origin.Function, "error", err)
		return wait()
	}
	return nil, &rec, nil
}

// execute runs one task's call and stores its outcome.
func (m *Manager) execute(ctx context.Context, cancel context.CancelCauseFunc, rec Record, run Run) {
	defer m.wg.Done()
	defer cancel(nil)
	defer m.forget(rec.ID)
	result, err := run(ctx)
	final := outcome(ctx, result, err)
	ended := false
	stored, uerr := m.cfg.Store.Update(context.Background(), rec.ID, func(r *Record) error {
		ended = false // a store may apply change again (RedisStore retries)
		if r.Status.Terminal() {
			return nil // failed meanwhile (a lease judged over): keep it
		}
		r.Status, r.StatusMessage, r.Result, r.Error = final.Status, final.StatusMessage, final.Result, final.Error
		r.InputRequests = nil
		r.LastUpdatedAt = time.Now().UTC()
		ended = true
		return nil
	})
	if uerr != nil {
		m.cfg.Logger.Error("task outcome not stored", "task", rec.ID, "error", uerr)
		return
	}
	if ended {
		m.ended(stored)
	}
}

// Watch calls fn with the record of every task this Manager ends, as
// stored once it is terminal: a call run here that completed, failed or
// was cancelled (execute), and a task of a dead replica that Get failed
// (its lease ran out). Each such change is reported once, after it is
// stored; a task ended by another Manager on the same Store is not
// reported here (its Manager reports it). fn runs on the goroutine that
// ended the task and must not block: hand slow work (writing to a
// client) to a goroutine of its own. It is the hook of the extension's
// "Task Status Notifications"; the function Watch returns unregisters
// fn (safe to call more than once).
func (m *Manager) Watch(fn func(Record)) (stop func()) {
	key := &fn
	m.watchMu.Lock()
	if m.watchers == nil {
		m.watchers = map[*func(Record)]struct{}{}
	}
	m.watchers[key] = struct{}{}
	m.watchMu.Unlock()
	return func() {
		m.watchMu.Lock()
		delete(m.watchers, key)
		m.watchMu.Unlock()
	}
}

// ended reports rec, a task just stored terminal, to the Watch functions.
func (m *Manager) ended(rec Record) {
	m.watchMu.Lock()
	fns := make([]func(Record), 0, len(m.watchers))
	for fn := range m.watchers {
		fns = append(fns, *fn)
	}
	m.watchMu.Unlock()
	for _, fn := range fns {
		fn(rec)
	}
}

// outcome turns what a Run returned into a final record.
func outcome(ctx context.Context, result json.RawMessage, err error) Record {
	var rpcErr *RPCError
	switch {
	case err == nil:
		return Record{Status: Completed, Result: result}
	case ctx.Err() != nil:
		return Record{Status: Cancelled, StatusMessage: context.Cause(ctx).Error()}
	case errors.As(err, &rpcErr):
		b, _ := json.Marshal(rpcErr)
		return Record{Status: Failed, StatusMessage: rpcErr.Message, Error: b}
	default:
		b, _ := json.Marshal(RPCError{Code: -32603, Message: err.Error()})
		return Record{Status: Failed, StatusMessage: err.Error(), Error: b}
	}
}

// forget drops id from the calls running here.
func (m *Manager) forget(id string) {
	m.mu.Lock()
	delete(m.running, id)
	delete(m.inputs, id)
	m.mu.Unlock()
}

// Get returns owner's task id. A working task whose lease is over is
// failed first, naming its replica. Errors: ErrNotFound (also for
// another owner's task), or the store's.
func (m *Manager) Get(ctx context.Context, owner, id string) (Record, error) {
	rec, err := m.cfg.Store.Get(ctx, id)
	if err != nil {
		return Record{}, err
	}
	if rec.Owner != owner {
		return Record{}, ErrNotFound
	}
	if rec.Status.Terminal() || time.Now().Before(rec.LeaseUntil) {
		return rec, nil
	}
	failed := false
	rec, err = m.cfg.Store.Update(ctx, id, func(r *Record) error {
		failed = false // a store may apply change again (RedisStore retries)
		if !r.Status.Terminal() && !time.Now().Before(r.LeaseUntil) {
			msg := fmt.Sprintf("the replica running this task (%s) stopped renewing its lease at %s: it is gone, and the call with it", r.Replica, r.LeaseUntil.Format(time.RFC3339Nano))
			b, _ := json.Marshal(RPCError{Code: -32603, Message: msg})
			r.Status, r.StatusMessage, r.Error, r.LastUpdatedAt = Failed, msg, b, time.Now().UTC()
			failed = true
		}
		return nil
	})
	if err == nil && failed {
		m.ended(rec)
	}
	return rec, err
}

// Cancel asks for owner's task id to be cancelled (extension, "Task
// Cancellation": cooperative and eventually consistent). A call running
// on this replica is cancelled at once; one on another replica at that
// replica's next lease renewal. A task already terminal is left as it
// is. Errors: ErrNotFound (also for another owner's task), or the
// store's.
func (m *Manager) Cancel(ctx context.Context, owner, id string) error {
	rec, err := m.cfg.Store.Get(ctx, id)
	if err != nil {
		return err
	}
	if rec.Owner != owner {
		return ErrNotFound
	}
	if rec.Status.Terminal() {
		return nil
	}
	if _, err := m.cfg.Store.Update(ctx, id, func(r *Record) error {
		r.CancelRequested = true
		return nil
	}); err != nil {
		return err
	}
	m.mu.Lock()
	cancel := m.running[id]
	m.mu.Unlock()
	if cancel != nil {
		cancel(ErrCancelled)
	}
	return nil
}

// renewLoop renews the leases of the calls running here every Lease/3,
// and cancels those whose task asks for it.
func (m *Manager) renewLoop() {
	defer m.wg.Done()
	t := time.NewTicker(max(m.cfg.Lease/3, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.renew()
		}
	}
}

// renew renews every running call's lease once.
func (m *Manager) renew() {
	m.mu.Lock()
	ids := make(map[string]context.CancelCauseFunc, len(m.running))
	for id, c := range m.running {
		ids[id] = c
	}
	m.mu.Unlock()
	for id, cancel := range ids {
		rec, err := m.cfg.Store.Update(context.Background(), id, func(r *Record) error {
			if !r.Status.Terminal() {
				r.LeaseUntil = time.Now().Add(m.cfg.Lease)
			}
			return nil
		})
		switch {
		case err != nil:
			m.cfg.Logger.Warn("task lease not renewed", "task", id, "error", err)
		case rec.CancelRequested:
			cancel(ErrCancelled)
		case rec.Status.Terminal():
			cancel(errEndedElsewhere)
		}
	}
}

// Running returns how many calls run on this replica.
func (m *Manager) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.running)
}

// Close cancels the calls running here, waits for their outcome to be
// stored (cancelled) and stops lease renewal. It does not close the
// Store.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	for _, cancel := range m.running {
		cancel(ErrClosed)
	}
	m.mu.Unlock()
	close(m.stop)
	m.wg.Wait()
}

// List returns owner's unexpired tasks whose call came from front end
// frontEnd (Origin.FrontEnd), newest first (by CreatedAt, then id): what
// the MCP 2025-11-25 tasks/list shows a requestor. A task that expires
// between the index and its record is left out. Errors: the store's.
func (m *Manager) List(ctx context.Context, owner, frontEnd string) ([]Record, error) {
	ids, err := m.cfg.Store.IDs(ctx, owner)
	if err != nil {
		return nil, err
	}
	recs := make([]Record, 0, len(ids))
	for _, id := range ids {
		rec, err := m.Get(ctx, owner, id)
		switch {
		case errors.Is(err, ErrNotFound):
			continue
		case err != nil:
			return nil, err
		}
		if rec.Origin.FrontEnd == frontEnd {
			recs = append(recs, rec)
		}
	}
	slices.SortFunc(recs, func(a, b Record) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return recs, nil
}
