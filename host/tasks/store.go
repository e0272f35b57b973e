package tasks

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Store keeps task records. Implementations are safe for concurrent use,
// and every replica sharing one Store sees the same records.
type Store interface {
	// Create stores a new record, kept until rec.ExpiresAt(). It returns
	// only once a Get of rec.ID on any replica would find it (extension,
	// "Task Creation": durably created). Errors: ErrExists, or the
	// store's.
	Create(ctx context.Context, rec Record) error
	// Get returns the record of id. Errors: ErrNotFound (absent or
	// expired), or the store's.
	Get(ctx context.Context, id string) (Record, error)
	// Update applies change to the record of id atomically (no other
	// Update of id interleaves) and returns the record as stored after
	// it. A change that returns an error stores nothing and Update
	// returns that error. Errors: ErrNotFound, change's, or the store's.
	Update(ctx context.Context, id string, change func(*Record) error) (Record, error)
	// Usage returns how many unexpired tasks owner holds and the bytes of
	// their results and errors.
	Usage(ctx context.Context, owner string) (count int, bytes int64, err error)
	// IDs returns the ids of owner's unexpired tasks, in no particular
	// order (at most the owner's task cap: Config.MaxPerOwner bounds
	// them). Errors: the store's.
	IDs(ctx context.Context, owner string) ([]string, error)
	// Close releases the store's resources.
	Close() error
}

// MemoryStore is a Store in this process's memory: the default, for one
// host. Expired records are dropped when they are next looked at.
type MemoryStore struct {
	mu   sync.Mutex
	recs map[string]Record
	now  func() time.Time
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{recs: map[string]Record{}, now: time.Now}
}

var _ Store = (*MemoryStore)(nil)

// Create implements Store.
func (s *MemoryStore) Create(_ context.Context, rec Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.live(rec.ID); ok {
		return ErrExists
	}
	s.recs[rec.ID] = rec
	return nil
}

// live returns the unexpired record of id, dropping it if expired. The
// caller holds s.mu.
func (s *MemoryStore) live(id string) (Record, bool) {
	rec, ok := s.recs[id]
	if ok && !s.now().Before(rec.ExpiresAt()) {
		delete(s.recs, id)
		return Record{}, false
	}
	return rec, ok
}

// Get implements Store.
func (s *MemoryStore) Get(_ context.Context, id string) (Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.live(id)
	if !ok {
		return Record{}, ErrNotFound
	}
	return rec, nil
}

// Update implements Store.
func (s *MemoryStore) Update(_ context.Context, id string, change func(*Record) error) (Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.live(id)
	if !ok {
		return Record{}, ErrNotFound
	}
	if err := change(&rec); err != nil {
		return Record{}, err
	}
	s.recs[id] = rec
	return rec, nil
}

// Usage implements Store.
func (s *MemoryStore) Usage(_ context.Context, owner string) (int, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, bytes := 0, int64(0)
	for id, rec := range s.recs {
		if _, ok := s.live(id); ok && rec.Owner == owner {
			n++
			bytes += rec.size()
		}
	}
	return n, bytes, nil
}

// IDs implements Store.
func (s *MemoryStore) IDs(_ context.Context, owner string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id, rec := range s.recs {
		if _, ok := s.live(id); ok && rec.Owner == owner {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// Close implements Store.
func (s *MemoryStore) Close() error { return nil }

// StoreMemory is the --task-store value of the MemoryStore (the default).
const StoreMemory = "memory"

// CheckStore checks a --task-store value without connecting: "" or
// StoreMemory, or a Redis URL redis://[:PASSWORD@]HOST:PORT/DB
// (rediss:// for TLS) as go-redis parses it. Errors say what is wrong,
// naming the URL without its password.
func CheckStore(spec string) error {
	switch {
	case spec == "" || spec == StoreMemory:
		return nil
	case strings.HasPrefix(spec, "redis://") || strings.HasPrefix(spec, "rediss://"):
		if _, err := redis.ParseURL(spec); err != nil {
			return fmt.Errorf("task store %s: %w", redactURL(spec), err)
		}
		return nil
	}
	return fmt.Errorf("task store %q: want %q or a Redis URL redis://HOST:PORT/DB (rediss:// for TLS)", redactURL(spec), StoreMemory)
}

// OpenStore opens the store a --task-store value names (CheckStore): a
// new MemoryStore, or a RedisStore whose server must answer within ctx.
// Errors: CheckStore's, or the Redis server not answering.
func OpenStore(ctx context.Context, spec string) (Store, error) {
	if err := CheckStore(spec); err != nil {
		return nil, err
	}
	if spec == "" || spec == StoreMemory {
		return NewMemoryStore(), nil
	}
	return NewRedisStore(ctx, spec)
}
