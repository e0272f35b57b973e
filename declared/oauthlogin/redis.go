package oauthlogin

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/oauth2"
)

// DefaultRedisPrefix is the prefix of every key RedisStore writes.
const DefaultRedisPrefix = "opentool-host:oauth:"

// redisTimeout bounds each Redis command of a RedisStore (Store's
// methods take no context).
const redisTimeout = 5 * time.Second

// lockTTL is how long a refresh lock holds when its holder never
// releases it (a replica that stopped mid-refresh); lockPoll is how
// often a waiter tries again.
const (
	lockTTL  = 45 * time.Second
	lockPoll = 50 * time.Millisecond
)

// RedisStore is a ClientStore and Lister in Redis (go-redis), shared by
// every replica given the same Redis and the same --oauth-token-key: a
// login made through one replica is used by all, and a refresh by one
// is seen by the others.
//
// Keys, all under the prefix: PREFIX tokens:SERVER and PREFIX
// clients:SERVER, hashes whose field is the hex SHA-256 of the principal
// and whose value is {principal, token or client} as JSON sealed with
// AES-256-GCM under the key of the secret (newSealer, as FileStore),
// bound to the kind, server and field (a value moved to another field
// or server does not open); PREFIX lock:SERVER:HASH, a refresh lock
// (Lock). Neither tokens nor principals are readable in Redis.
type RedisStore struct {
	rdb    *redis.Client
	prefix string
	aead   cipher.AEAD
}

var (
	_ ClientStore = (*RedisStore)(nil)
	_ Lister      = (*RedisStore)(nil)
	_ Locker      = (*RedisStore)(nil)
)

// Locker is a Store shared by several hosts whose refreshes take a lock
// of the store's: one refresh of a token at a time across them all, so a
// rotated refresh token (OAuth 2.1 section 4.3.1) is spent once and the
// others read the new token (package mcpadapter re-reads the Store once
// it holds the lock).
type Locker interface {
	// Lock waits, within ctx, until it holds the lock of (server,
	// principal), and returns its release. Errors: ctx's, or the
	// store's.
	Lock(ctx context.Context, server, principal string) (unlock func(), err error)
}

// NewRedisStore connects to the Redis server of rawURL
// (redis://[:PASSWORD@]HOST:PORT/DB, or rediss:// for TLS: the URL of
// --task-store) and checks it answers within ctx; values are sealed
// with secret. Errors: an empty secret, a URL that does not parse (the
// message names the URL without its password), the server not
// answering.
func NewRedisStore(ctx context.Context, rawURL string, secret []byte) (*RedisStore, error) {
	aead, err := newSealer(secret)
	if err != nil {
		return nil, err
	}
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("oauth token store %s: %w", redacted(rawURL), err)
	}
	rdb := redis.NewClient(opt)
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("oauth token store %s: %w", redacted(rawURL), err)
	}
	return &RedisStore{rdb: rdb, prefix: DefaultRedisPrefix, aead: aead}, nil
}

// Close closes the store's connections.
func (s *RedisStore) Close() error { return s.rdb.Close() }

// redacted returns rawURL without its password, for messages.
func redacted(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(a URL that does not parse)"
	}
	return u.Redacted()
}

// principalHash is the field of principal in the store's hashes.
func principalHash(principal string) string {
	h := sha256.Sum256([]byte(principal))
	return hex.EncodeToString(h[:])
}

// redisEntry is the plaintext of one sealed value.
type redisEntry struct {
	Principal string          `json:"principal"`
	Value     json.RawMessage `json:"value"`
}

// redisAAD is the additional data of a value of kind for server at
// field (the principal's hash).
func redisAAD(kind, server, field string) string {
	return "opentool-host oauth " + kind + " v1\x00" + server + "\x00" + field
}

func (s *RedisStore) hashKey(kind, server string) string { return s.prefix + kind + ":" + server }

// put seals v for (server, principal) into the hash of kind.
func (s *RedisStore) put(kind, server, principal string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	plain, err := json.Marshal(redisEntry{Principal: principal, Value: b})
	if err != nil {
		return err
	}
	sealed, err := seal(s.aead, plain, redisAAD(kind, server, principalHash(principal)))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	return s.rdb.HSet(ctx, s.hashKey(kind, server), principalHash(principal), sealed).Err()
}

// open is the entry of sealed value b at field of the hash of kind
// for server. Errors: a value that does not open with the store's key
// bound to (kind, server, field), or whose principal is not the one of
// field.
func (s *RedisStore) open(kind, server, field string, b []byte) (redisEntry, error) {
	var e redisEntry
	plain, err := open(s.aead, b, redisAAD(kind, server, field))
	if err != nil {
		return e, fmt.Errorf("oauth token store: the %s of %q: %w", kind, server, err)
	}
	if err := json.Unmarshal(plain, &e); err != nil {
		return e, fmt.Errorf("oauth token store: %w", err)
	}
	if principalHash(e.Principal) != field {
		return e, fmt.Errorf("oauth token store: the %s of %q: a value of another principal", kind, server)
	}
	return e, nil
}

// get opens the value of kind for (server, principal) into v. Errors:
// ErrNoToken when there is none; a value that does not open.
func (s *RedisStore) get(kind, server, principal string, v any) error {
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	b, err := s.rdb.HGet(ctx, s.hashKey(kind, server), principalHash(principal)).Bytes()
	if errors.Is(err, redis.Nil) {
		return ErrNoToken
	}
	if err != nil {
		return fmt.Errorf("oauth token store: %w", err)
	}
	e, err := s.open(kind, server, principalHash(principal), b)
	if err != nil {
		return err
	}
	return json.Unmarshal(e.Value, v)
}

// Get implements Store.
func (s *RedisStore) Get(server, principal string) (*oauth2.Token, error) {
	var t oauth2.Token
	if err := s.get("tokens", server, principal, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Put implements Store.
func (s *RedisStore) Put(server, principal string, t *oauth2.Token) error {
	return s.put("tokens", server, principal, t)
}

// Delete implements Store: the token and the client kept for it.
func (s *RedisStore) Delete(server, principal string) error {
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	f := principalHash(principal)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HDel(ctx, s.hashKey("tokens", server), f)
		p.HDel(ctx, s.hashKey("clients", server), f)
		return nil
	})
	return err
}

// GetClient implements ClientStore.
func (s *RedisStore) GetClient(server, principal string) (*Client, error) {
	var c Client
	if err := s.get("clients", server, principal, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// PutClient implements ClientStore.
func (s *RedisStore) PutClient(server, principal string, c *Client) error {
	return s.put("clients", server, principal, c)
}

// Principals implements Lister: the principals holding a token for
// server, sorted. Errors: Redis's, or a value that does not open.
func (s *RedisStore) Principals(server string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	m, err := s.rdb.HGetAll(ctx, s.hashKey("tokens", server)).Result()
	if err != nil {
		return nil, fmt.Errorf("oauth token store: %w", err)
	}
	var out []string
	for field, v := range m {
		e, err := s.open("tokens", server, field, []byte(v))
		if err != nil {
			return nil, err
		}
		out = append(out, e.Principal)
	}
	slices.Sort(out)
	return out, nil
}

// Lock implements Locker: SET NX PX of a random token at PREFIX
// lock:SERVER:HASH, tried every lockPoll until ctx ends; the release
// deletes it only while it holds that token (a lock that expired and
// was taken by another is left to it).
func (s *RedisStore) Lock(ctx context.Context, server, principal string) (func(), error) {
	key := s.prefix + "lock:" + server + ":" + principalHash(principal)
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	t := hex.EncodeToString(tok)
	for {
		ok, err := s.rdb.SetNX(ctx, key, t, lockTTL).Result()
		if err != nil {
			return nil, fmt.Errorf("oauth token store: refresh lock: %w", err)
		}
		if ok {
			return func() {
				ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
				defer cancel()
				_ = unlockScript.Run(ctx, s.rdb, []string{key}, t).Err()
			}, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("oauth token store: refresh lock: %w", ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

// unlockScript deletes KEYS[1] when it holds ARGV[1].
var unlockScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)
