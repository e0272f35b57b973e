// Package oauthlogin holds the tokens the host uses as the OAuth 2.1 client
// of servers declared by URL (the MCP authorization spec, 2025-11-25,
// "Authorization"), one per server and principal, and the login step that
// gets them: the authorization code flow a person completes in a browser.
//
// A principal is who a token acts for: "" for a server declared with
// shared credentials (one login, every caller), else the caller's
// principal as host/access names it (an API key's name, or an OAuth
// principal) for a server declared "credentials": "per-user".
package oauthlogin

import (
	"context"
	"errors"
	"slices"
	"sync"

	"golang.org/x/oauth2"
)

// ErrNoToken is returned by Store.Get when no token is held for the server
// and principal: the principal has not logged in, or logged out.
var ErrNoToken = errors.New("no token")

// Store holds tokens by server name (the declaration's name) and principal
// ("" for shared credentials). Implementations are safe for concurrent use.
type Store interface {
	// Get returns the token held for (server, principal), or an error
	// wrapping ErrNoToken when there is none.
	Get(server, principal string) (*oauth2.Token, error)
	// Put replaces the token held for (server, principal).
	Put(server, principal string, t *oauth2.Token) error
	// Delete removes the token held for (server, principal); deleting
	// none is not an error.
	Delete(server, principal string) error
}

// Logins begins the login step for a server and principal.
type Logins interface {
	// Begin returns the authorization URL a person opens to log in to
	// server as principal; the code arrives at the host's callback and
	// the token is put in the Store. Errors: the server is unknown, not
	// declared with "oauth", or its metadata could not be fetched.
	Begin(ctx context.Context, server, principal string) (authURL string, err error)
}

// MemoryStore is a Store in memory, for tests and for a host without a
// state folder. Its zero value is ready to use.
type MemoryStore struct {
	mu sync.Mutex
	m  map[[2]string]*oauth2.Token
	c  map[[2]string]*Client
}

// Get implements Store.
func (s *MemoryStore) Get(server, principal string) (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.m[[2]string{server, principal}]
	if !ok {
		return nil, ErrNoToken
	}
	c := *t
	return &c, nil
}

// Put implements Store.
func (s *MemoryStore) Put(server, principal string, t *oauth2.Token) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[[2]string]*oauth2.Token{}
	}
	c := *t
	s.m[[2]string{server, principal}] = &c
	return nil
}

// Delete implements Store.
func (s *MemoryStore) Delete(server, principal string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, [2]string{server, principal})
	delete(s.c, [2]string{server, principal})
	return nil
}

// GetClient implements ClientStore.
func (s *MemoryStore) GetClient(server, principal string) (*Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.c[[2]string{server, principal}]
	if !ok {
		return nil, ErrNoToken
	}
	d := *c
	return &d, nil
}

// PutClient implements ClientStore.
func (s *MemoryStore) PutClient(server, principal string, c *Client) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == nil {
		s.c = map[[2]string]*Client{}
	}
	d := *c
	s.c[[2]string{server, principal}] = &d
	return nil
}

// Lister is a Store that can say who holds a token for a server: the
// host lists a per-user server's tools with one of them (package
// mcpadapter). A Store that is not a Lister leaves such a server
// unlisted, "needs authorization", until it is.
type Lister interface {
	// Principals returns the principals holding a token for server, in
	// a stable order (sorted); none is not an error.
	Principals(server string) ([]string, error)
}

// Principals implements Lister.
func (s *MemoryStore) Principals(server string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.m {
		if k[0] == server {
			out = append(out, k[1])
		}
	}
	slices.Sort(out)
	return out, nil
}
