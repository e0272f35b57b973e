package oauthlogin

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/oauth2"
)

// fileAAD is the additional data every sealed token file is bound to:
// a file of another format or version does not open as one.
const fileAAD = "opentool-host oauth tokens v1"

// Client is what refreshes a server's tokens without a person: the
// client the login used (declared, or registered by Dynamic Client
// Registration, RFC 7591) and the authorization server's token
// endpoint, kept beside the tokens so that a restarted host refreshes
// too.
type Client struct {
	ClientID     string           `json:"clientId"`
	ClientSecret string           `json:"clientSecret,omitempty"`
	TokenURL     string           `json:"tokenUrl"`
	AuthStyle    oauth2.AuthStyle `json:"authStyle,omitempty"`
}

// ClientStore is a Store that also keeps each server's Client (FileStore
// and MemoryStore do).
type ClientStore interface {
	Store
	// GetClient returns the client kept for (server, principal), or an
	// error wrapping ErrNoToken.
	GetClient(server, principal string) (*Client, error)
	// PutClient replaces it.
	PutClient(server, principal string, c *Client) error
}

// newSealer is the AEAD every sealed store uses (FileStore,
// RedisStore): AES-256-GCM under a key derived from the operator's
// secret (SHA-256 of it). Errors: an empty secret.
func newSealer(secret []byte) (cipher.AEAD, error) {
	if len(secret) == 0 {
		return nil, errors.New("oauth token store: the secret is empty")
	}
	k := sha256.Sum256(secret)
	block, err := aes.NewCipher(k[:])
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// seal is plain sealed with aead, bound to aad: a random nonce, then
// the ciphertext and its tag.
func seal(aead cipher.AEAD, plain []byte, aad string) ([]byte, error) {
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return aead.Seal(nonce, nonce, plain, []byte(aad)), nil
}

// open is the plaintext of seal's b. Errors: b too short, or not sealed
// with this key and aad (another secret, or changed).
func open(aead cipher.AEAD, b []byte, aad string) ([]byte, error) {
	n := aead.NonceSize()
	if len(b) < n {
		return nil, errors.New("too short to be sealed")
	}
	plain, err := aead.Open(nil, b[:n], b[n:], []byte(aad))
	if err != nil {
		return nil, errors.New("does not open with this secret (another secret, or it was changed)")
	}
	return plain, nil
}

// FileStore is a Store of one file, sealed with AES-256-GCM under a key
// derived from the operator's secret (SHA-256 of it, newSealer), written whole
// (temporary file, rename) with mode 0600 on every change and read once
// at OpenFileStore, so tokens survive a restart and are never plaintext
// on disk.
type FileStore struct {
	path string
	aead cipher.AEAD

	mu sync.Mutex
	f  fileContent
}

// fileContent is the plaintext of a FileStore's file.
type fileContent struct {
	Tokens  map[string]*oauth2.Token `json:"tokens"`
	Clients map[string]*Client       `json:"clients"`
}

// storeKey is the key of (server, principal) in fileContent: the NUL
// cannot be in a server name.
func storeKey(server, principal string) string { return server + "\x00" + principal }

// OpenFileStore opens the store at path (created with its folder, mode
// 0700, when absent) sealed with secret. Errors: an empty secret; a
// file that does not open with this secret (another key, or changed:
// the error says so and the file is left as is); the file unreadable.
func OpenFileStore(path string, secret []byte) (*FileStore, error) {
	aead, err := newSealer(secret)
	if err != nil {
		return nil, err
	}
	s := &FileStore{path: path, aead: aead, f: fileContent{Tokens: map[string]*oauth2.Token{}, Clients: map[string]*Client{}}}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, os.MkdirAll(filepath.Dir(path), 0o700)
	case err != nil:
		return nil, fmt.Errorf("oauth token store: %w", err)
	}
	plain, err := open(aead, b, fileAAD)
	if err != nil {
		return nil, fmt.Errorf("oauth token store %s: %w", path, err)
	}
	if err := json.Unmarshal(plain, &s.f); err != nil {
		return nil, fmt.Errorf("oauth token store %s: %w", path, err)
	}
	if s.f.Tokens == nil {
		s.f.Tokens = map[string]*oauth2.Token{}
	}
	if s.f.Clients == nil {
		s.f.Clients = map[string]*Client{}
	}
	return s, nil
}

// save seals s.f into s.path. Callers hold s.mu.
func (s *FileStore) save() error {
	plain, err := json.Marshal(s.f)
	if err != nil {
		return err
	}
	sealed, err := seal(s.aead, plain, fileAAD)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".tokens-*")
	if err != nil {
		return fmt.Errorf("oauth token store: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is there
	err = tmp.Chmod(0o600)
	if err == nil {
		_, err = tmp.Write(sealed)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.path)
	}
	if err != nil {
		return fmt.Errorf("oauth token store: %w", err)
	}
	return nil
}

// Get implements Store.
func (s *FileStore) Get(server, principal string) (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.f.Tokens[storeKey(server, principal)]
	if !ok {
		return nil, ErrNoToken
	}
	c := *t
	return &c, nil
}

// Put implements Store.
func (s *FileStore) Put(server, principal string, t *oauth2.Token) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := *t
	s.f.Tokens[storeKey(server, principal)] = &c
	return s.save()
}

// Delete implements Store: the token and the client kept for it.
func (s *FileStore) Delete(server, principal string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := storeKey(server, principal)
	_, hadT := s.f.Tokens[k]
	_, hadC := s.f.Clients[k]
	if !hadT && !hadC {
		return nil
	}
	delete(s.f.Tokens, k)
	delete(s.f.Clients, k)
	return s.save()
}

// GetClient implements ClientStore.
func (s *FileStore) GetClient(server, principal string) (*Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.f.Clients[storeKey(server, principal)]
	if !ok {
		return nil, ErrNoToken
	}
	d := *c
	return &d, nil
}

// PutClient implements ClientStore.
func (s *FileStore) PutClient(server, principal string, c *Client) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := *c
	s.f.Clients[storeKey(server, principal)] = &d
	return s.save()
}

// Principals implements Lister: the principals holding a token for
// server, sorted.
func (s *FileStore) Principals(server string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.f.Tokens {
		if sv, p, ok := strings.Cut(k, "\x00"); ok && sv == server {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Both stores say who holds a token (a per-user server lists with one).
var (
	_ Lister = (*FileStore)(nil)
	_ Lister = (*MemoryStore)(nil)
)
