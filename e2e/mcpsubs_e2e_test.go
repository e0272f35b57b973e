package e2e_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/testkit"
)

// subsClient is one MCP client of the host's /mcp that records the
// notifications/resources/updated it receives, in order.
type subsClient struct {
	cs      *mcp.ClientSession
	updated chan string // each update's URI
}

// subsConnect connects a client of url's /mcp (2025-11-25, with a
// session) that records its resource updates.
func subsConnect(t *testing.T, url string) *subsClient {
	t.Helper()
	c := &subsClient{updated: make(chan string, 100)}
	c.cs = llConnect(t, &mcp.StreamableClientTransport{Endpoint: url + "/mcp"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { c.updated <- r.Params.URI },
	})
	return c
}

// touch calls mcp-notes' touch of uri on c's session and returns whether
// the server that served it had a subscription to uri.
func (c *subsClient) touch(t *testing.T, uri string) bool {
	t.Helper()
	out, isErr := msCall(t, c.cs, "touch", map[string]any{"uri": uri})
	if isErr || !strings.HasPrefix(out, "subscribed: ") {
		t.Fatalf("touch %s = %s (isError %v)", uri, out, isErr)
	}
	return out == "subscribed: true"
}

// nextUpdate returns the URI of c's next resource update, failing after
// 10 s.
func (c *subsClient) nextUpdate(t *testing.T) string {
	t.Helper()
	select {
	case uri := <-c.updated:
		return uri
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/resources/updated within 10 s")
		return ""
	}
}

// subscribe subscribes c to uri.
func (c *subsClient) subscribe(t *testing.T, uri string) {
	t.Helper()
	if err := c.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("resources/subscribe %s: %v", uri, err)
	}
}

// TestMCPResourceSubscriptionsPerClient: with a declared MCP server's
// sessions per client (the default), a client's resources/subscribe and
// unsubscribe reach its own upstream session (the server that serves
// its calls holds the subscription), and the server's
// notifications/resources/updated on that session reach that client
// only. Ordering: the server relays each session's messages in order,
// so b's own update (the marker) arriving first shows that a's update,
// sent before it, never reached b.
func TestMCPResourceSubscriptionsPerClient(t *testing.T) {
	dir := t.TempDir()
	msDeclare(t, dir, "notes", "--rich")
	hp := startHostProc(t, dir)
	a, b := subsConnect(t, hp.url), subsConnect(t, hp.url)
	const readme, logo = "notes://readme", "notes://logo"

	a.subscribe(t, readme)
	if b.touch(t, readme) {
		t.Fatal("b's server holds a's subscription")
	}
	if !a.touch(t, readme) {
		t.Fatal("a's subscription did not reach the server of a's own session")
	}
	if got := a.nextUpdate(t); got != readme {
		t.Fatalf("a's update: %s, want %s", got, readme)
	}
	b.subscribe(t, logo)
	if !b.touch(t, logo) {
		t.Fatal("b's subscription did not reach the server of b's own session")
	}
	if got := b.nextUpdate(t); got != logo {
		t.Fatalf("b, subscribed to %s only, received an update of %s first (a's)", logo, got)
	}

	// Unsubscribed: a's server no longer holds it, and a's next update is
	// its new subscription's.
	if err := a.cs.Unsubscribe(context.Background(), &mcp.UnsubscribeParams{URI: readme}); err != nil {
		t.Fatal(err)
	}
	if a.touch(t, readme) {
		t.Fatal("a's unsubscribe did not reach the server of a's own session")
	}
	a.subscribe(t, logo)
	if !a.touch(t, logo) {
		t.Fatal("a's second subscription did not reach its server")
	}
	if got := a.nextUpdate(t); got != logo {
		t.Fatalf("a, unsubscribed from %s, received an update of %s", readme, got)
	}
}

// TestMCPResourceSubscriptionEndsWithSession: a client session that
// subscribed through a declared server's shared session and ends (DELETE)
// unsubscribes: the server no longer holds the subscription.
func TestMCPResourceSubscriptionEndsWithSession(t *testing.T) {
	dir := t.TempDir()
	msShared(t, msDeclare(t, dir, "notes", "--rich"))
	hp := startHostProc(t, dir)
	a, b := subsConnect(t, hp.url), subsConnect(t, hp.url)
	const readme = "notes://readme"

	a.subscribe(t, readme)
	if !b.touch(t, readme) {
		t.Fatal("a's subscription did not reach the shared session")
	}
	if got := a.nextUpdate(t); got != readme {
		t.Fatalf("a's update: %s, want %s", got, readme)
	}
	b.subscribe(t, readme)
	if err := a.cs.Close(); err != nil {
		t.Fatal(err)
	}
	if !b.touch(t, readme) {
		t.Fatal("a's end unsubscribed b too")
	}
	if got := b.nextUpdate(t); got != readme {
		t.Fatalf("b's update: %s, want %s", got, readme)
	}
	if err := b.cs.Close(); err != nil {
		t.Fatal(err)
	}
	c := subsConnect(t, hp.url)
	testkit.Eventually(t, 10*time.Second, "the last session's end unsubscribes the server", func() bool { return !c.touch(t, readme) })
}

// TestMCPServerListChangedReachesEveryClient: a declared MCP server's
// notifications/resources/list_changed on a client's own session (a's
// add_note adds a resource there) reaches every client session of /mcp,
// as the server sent it, though the lists the host serves (the shared
// session's) did not change.
func TestMCPServerListChangedReachesEveryClient(t *testing.T) {
	dir := t.TempDir()
	msDeclare(t, dir, "notes", "--rich")
	hp := startHostProc(t, dir)
	connect := func() (*mcp.ClientSession, chan struct{}) {
		got := make(chan struct{}, 10)
		cs := llConnect(t, &mcp.StreamableClientTransport{Endpoint: hp.url + "/mcp"}, &mcp.ClientOptions{
			ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { got <- struct{}{} },
		})
		return cs, got
	}
	a, aGot := connect()
	b, bGot := connect()
	before, _, _ := llCatalog(t, b)
	if out, isErr := msCall(t, a, "add_note", map[string]any{"title": "a's"}); isErr {
		t.Fatalf("add_note: %s", out)
	}
	for name, got := range map[string]chan struct{}{"a": aGot, "b": bGot} {
		select {
		case <-got:
		case <-time.After(10 * time.Second):
			t.Fatalf("client %s: no notifications/resources/list_changed within 10 s", name)
		}
	}
	if after, _, _ := llCatalog(t, b); after != before {
		t.Errorf("the host's resources changed with a's own session's: %s, before %s", after, before)
	}
}

// TestMCPServerListChangedPerKey (issue 32): a declared MCP server's own
// notifications/resources/list_changed reaches the sessions whose API key
// may see that server, and no other: a key that may not see it is not
// told that it exists and changed. The key that sees only "other*" gets
// nothing of notes' before the log messages of its own call that follows
// on the same GET stream (sent in order); nor the host's own
// tools/list_changed when a server it may not see (zeta) comes; and it
// gets that of a server it may see (other2).
func TestMCPServerListChangedPerKey(t *testing.T) {
	dir := t.TempDir()
	msDeclare(t, dir, "notes", "--rich")
	msDeclare(t, dir, "other", "--rich")
	writeTestFile(t, filepath.Join(dir, "other.policy.json"), `{"prefix":"other_"}`)
	keys := filepath.Join(t.TempDir(), "keys.json")
	writeTestFile(t, keys, `{"keys":[{"name":"all","key":"ka","allow":["*"]},{"name":"other-only","key":"ko","allow":["plugin:other*"]}]}`)
	hp := startHostProc(t, dir, "--api-keys-file", keys)

	other := connectLogClient(t, hp, "ko", "info") // may not see notes
	all := connectLogClient(t, hp, "ka", "")
	if out := llCall(t, all.cs, &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"title": "all's"}}); !strings.Contains(out, "all's") {
		t.Fatalf("add_note = %s", out)
	}
	waitSignal(t, all.resourceLists, "the key that sees notes: notes' notifications/resources/list_changed")

	// other's own call, whose log messages outside it come after notes'
	// list_changed on other's GET stream, had it been sent there.
	noneBefore(t, other, 1, other.resourceLists, "a key that may not see notes got notes' notifications/resources/list_changed")

	// A server it may not see comes (hot reload): the host's
	// tools/list_changed reaches the key that sees all, not it (before
	// the log messages of its next call).
	writeTestFile(t, filepath.Join(dir, "zeta.policy.json"), `{"prefix":"zeta_"}`)
	msDeclare(t, dir, "zeta")
	waitSignal(t, all.toolLists, "the key that sees all: zeta's notifications/tools/list_changed")
	noneBefore(t, other, 2, other.toolLists, "a key that may not see zeta got the tools/list_changed of its coming")

	// A server it may see comes: its tools/list_changed reaches it.
	writeTestFile(t, filepath.Join(dir, "other2.policy.json"), `{"prefix":"other2_"}`)
	msDeclare(t, dir, "other2")
	waitSignal(t, other.toolLists, "the key that sees other2: notifications/tools/list_changed")
}

// noneBefore calls other_log_later on lc, waits for its nth "later
// done" (log messages outside the call, on lc's GET stream after every
// notification sent there before) and fails with why when c has a value
// by then.
func noneBefore(t *testing.T, lc *logClient, n int, c <-chan struct{}, why string) {
	t.Helper()
	if out := llCall(t, lc.cs, &mcp.CallToolParams{Name: "other_log_later", Arguments: map[string]any{"n": 1, "delay_ms": 20}}); !strings.Contains(out, "will log 1") {
		t.Fatalf("other_log_later = %q", out)
	}
	lc.waitCount(t, "later done", n)
	select {
	case <-c:
		t.Fatal(why)
	default:
	}
}

// waitSignal waits up to 30 s for a value on c; what names it.
func waitSignal(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: none within 30 s", what)
	}
}
