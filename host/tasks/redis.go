package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/redis/go-redis/v9"
)

// RedisStore is a Store in Redis (go-redis), shared by every replica
// given the same URL (--task-store redis://HOST:PORT/DB).
//
// Keys, all under Prefix:
//   - PREFIX task:ID: the record as JSON, expiring at its ExpiresAt
//     (PEXPIREAT), so Redis drops it by itself;
//   - PREFIX owner:OWNER: a sorted set of the owner's task ids scored by
//     expiry (ms), and PREFIX bytes:OWNER a hash of id → bytes of result
//     and error, both trimmed of expired ids by Usage.
//
// Update is an optimistic transaction (WATCH, MULTI/EXEC), retried when
// another replica changed the record in between.
type RedisStore struct {
	rdb    *redis.Client
	prefix string
}

var _ Store = (*RedisStore)(nil)

// DefaultRedisPrefix is the prefix of every key RedisStore writes.
const DefaultRedisPrefix = "opentool-host:tasks:"

// maxUpdateRetries is how often Update retries a transaction another
// replica's write broke.
const maxUpdateRetries = 16

// NewRedisStore connects to the Redis server of rawURL
// (redis://[:PASSWORD@]HOST:PORT/DB, or rediss:// for TLS) and checks it
// answers within ctx. Errors: a URL that does not parse (the message
// names the URL without its password), or the server not answering.
func NewRedisStore(ctx context.Context, rawURL string) (*RedisStore, error) {
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("task store %s: %w", redactURL(rawURL), err)
	}
	rdb := redis.NewClient(opt)
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("task store %s: %w", redactURL(rawURL), err)
	}
	return &RedisStore{rdb: rdb, prefix: DefaultRedisPrefix}, nil
}

// redactURL returns rawURL without its password, for messages.
func redactURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(a URL that does not parse)"
	}
	return u.Redacted()
}

func (s *RedisStore) taskKey(id string) string     { return s.prefix + "task:" + id }
func (s *RedisStore) ownerKey(owner string) string { return s.prefix + "owner:" + owner }
func (s *RedisStore) bytesKey(owner string) string { return s.prefix + "bytes:" + owner }

// Create implements Store: SET NX with the record's expiry, and the
// owner's index, in one MULTI/EXEC.
func (s *RedisStore) Create(ctx context.Context, rec Record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	exp := rec.ExpiresAt()
	var set *redis.BoolCmd
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		set = p.SetNX(ctx, s.taskKey(rec.ID), b, 0)
		p.PExpireAt(ctx, s.taskKey(rec.ID), exp)
		p.ZAdd(ctx, s.ownerKey(rec.Owner), redis.Z{Score: float64(exp.UnixMilli()), Member: rec.ID})
		p.HSet(ctx, s.bytesKey(rec.Owner), rec.ID, rec.size())
		return nil
	})
	if err != nil {
		return err
	}
	if !set.Val() {
		return ErrExists
	}
	return nil
}

// Get implements Store.
func (s *RedisStore) Get(ctx context.Context, id string) (Record, error) {
	b, err := s.rdb.Get(ctx, s.taskKey(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return Record{}, ErrNotFound
	}
	if err != nil {
		return Record{}, err
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return Record{}, fmt.Errorf("task %s: stored record does not decode: %w", id, err)
	}
	return rec, nil
}

// Update implements Store.
func (s *RedisStore) Update(ctx context.Context, id string, change func(*Record) error) (Record, error) {
	key := s.taskKey(id)
	var out Record
	txf := func(tx *redis.Tx) error {
		b, err := tx.Get(ctx, key).Bytes()
		if errors.Is(err, redis.Nil) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		var rec Record
		if err := json.Unmarshal(b, &rec); err != nil {
			return fmt.Errorf("task %s: stored record does not decode: %w", id, err)
		}
		if err := change(&rec); err != nil {
			return err
		}
		nb, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.SetArgs(ctx, key, nb, redis.SetArgs{KeepTTL: true})
			p.HSet(ctx, s.bytesKey(rec.Owner), rec.ID, rec.size())
			return nil
		})
		out = rec
		return err
	}
	for range maxUpdateRetries {
		err := s.rdb.Watch(ctx, txf, key)
		if errors.Is(err, redis.TxFailedErr) {
			continue // another replica wrote the record: read it again
		}
		if err != nil {
			return Record{}, err
		}
		return out, nil
	}
	return Record{}, fmt.Errorf("task %s: update kept conflicting with other replicas (%d tries)", id, maxUpdateRetries)
}

// Usage implements Store: expired ids leave the owner's index first.
func (s *RedisStore) Usage(ctx context.Context, owner string) (int, int64, error) {
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	expired, err := s.rdb.ZRangeByScore(ctx, s.ownerKey(owner), &redis.ZRangeBy{Min: "-inf", Max: now}).Result()
	if err != nil {
		return 0, 0, err
	}
	if len(expired) > 0 {
		members := make([]any, len(expired))
		for i, id := range expired {
			members[i] = id
		}
		if _, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.ZRem(ctx, s.ownerKey(owner), members...)
			p.HDel(ctx, s.bytesKey(owner), expired...)
			return nil
		}); err != nil {
			return 0, 0, err
		}
	}
	sizes, err := s.rdb.HVals(ctx, s.bytesKey(owner)).Result()
	if err != nil {
		return 0, 0, err
	}
	var total int64
	for _, v := range sizes {
		n, _ := strconv.ParseInt(v, 10, 64)
		total += n
	}
	return len(sizes), total, nil
}

// IDs implements Store: the owner's index, its expired members left out
// (Usage drops them).
func (s *RedisStore) IDs(ctx context.Context, owner string) ([]string, error) {
	now := strconv.FormatInt(time.Now().UnixMilli()+1, 10)
	return s.rdb.ZRangeByScore(ctx, s.ownerKey(owner), &redis.ZRangeBy{Min: now, Max: "+inf"}).Result()
}

// Close implements Store.
func (s *RedisStore) Close() error { return s.rdb.Close() }

// SetRedisLogger sends go-redis's own log lines (a pool that cannot dial,
// ...) to l at debug level instead of the process's stderr. go-redis has
// one logger for the whole process; the errors that matter reach callers
// as errors anyway.
func SetRedisLogger(l hclog.Logger) {
	redis.SetLogger(redisLogger{l})
}

// redisLogger is go-redis's logging interface over an hclog.Logger.
type redisLogger struct{ l hclog.Logger }

// Printf implements go-redis's internal.Logging.
func (r redisLogger) Printf(_ context.Context, format string, v ...any) {
	r.l.Debug(strings.TrimSpace(fmt.Sprintf(format, v...)))
}
