package main_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/internal/testutil"
)

// TestRestrictedKeySeesOnlyItsOwn: a key allowed some functions of a
// plugin sees, on /health, /status.json and /events, only the plugins it
// may call a function of, only those functions, no plugin's stderr and no
// other plugin's name (issue 20, finding 7). The admin key still sees
// everything.
func TestRestrictedKeySeesOnlyItsOwn(t *testing.T) {
	dir := t.TempDir()
	testutil.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	testutil.InstallPlugin(t, dir, "mock", "./plugins/mock")
	// text declares word_count and an "add" that calculator owns: its
	// status names calculator in conflicts.
	decl := `{"functions":[
  {"name":"word_count","description":"Counts words.","parameters":[{"name":"text","schema":{"type":"string"},"required":true}],"command":["wc"],"stdin":"text"},
  {"name":"add","description":"Not served: calculator owns add.","parameters":[],"command":["true"]}]}`
	if err := os.WriteFile(filepath.Join(dir, "text.tools.json"), []byte(decl), 0o644); err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keys, []byte(`{"keys":[{"name":"admin","key":"admin-key","allow":["*"]},{"name":"wc","key":"wc-key","allow":["word_count"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	hp := startHostProc(t, dir, "--api-keys-file", keys)
	testutil.Eventually(t, 20*time.Second, "text reports its conflict", func() bool {
		_, _, body := httpDo(t, http.MethodGet, hp.url+"/health", "admin-key", "")
		return strings.Contains(body, `"owner":"calculator"`)
	})

	for _, path := range []string{"/health", "/status.json"} {
		st, _, body := httpDo(t, http.MethodGet, hp.url+path, "wc-key", "")
		if st != 200 {
			t.Fatalf("%s: %d %s", path, st, body)
		}
		var doc struct {
			Plugins []struct {
				Name      string            `json:"name"`
				Functions []string          `json:"functions"`
				Conflicts []json.RawMessage `json:"conflicts"`
				Stderr    []string          `json:"stderr"`
			} `json:"plugins"`
		}
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Plugins) != 1 || doc.Plugins[0].Name != "text" {
			t.Fatalf("%s shows the wc key plugins %+v, want text alone", path, doc.Plugins)
		}
		p := doc.Plugins[0]
		if !slices.Equal(p.Functions, []string{"word_count"}) || len(p.Conflicts) != 0 || len(p.Stderr) != 0 {
			t.Errorf("%s: the wc key sees text as %+v, want only word_count, no conflicts, no stderr", path, p)
		}
		for _, other := range []string{"calculator", "mock", `"add"`, "subtract"} {
			if strings.Contains(body, other) {
				t.Errorf("%s: the wc key sees %s: %s", path, other, body)
			}
		}
	}
	// The admin key sees every plugin, every function and the conflict.
	_, _, body := httpDo(t, http.MethodGet, hp.url+"/health", "admin-key", "")
	for _, want := range []string{`"name":"calculator"`, `"name":"mock"`, `"owner":"calculator"`, `"word_count"`} {
		if !strings.Contains(body, want) {
			t.Errorf("admin /health lacks %s", want)
		}
	}

	// /events: the collision names another plugin; the wc key does not
	// get it, and gets text's events.
	req, _ := http.NewRequest(http.MethodGet, hp.url+"/events", nil)
	req.Header.Set("Authorization", "Bearer wc-key")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// A change of text's declaration makes text publish events again
	// (replaced), and the collision again.
	if err := os.WriteFile(filepath.Join(dir, "text.tools.json"), []byte(strings.Replace(decl, "Counts words.", "Counts words (v2).", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(20 * time.Second)
	sawText := false
	for !sawText {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("/events ended")
			}
			if strings.HasPrefix(l, "data:") {
				if strings.Contains(l, "calculator") || strings.Contains(l, "mock") {
					t.Errorf("/events gave the wc key %s", l)
				}
				if strings.Contains(l, `"plugin":"text"`) && strings.Contains(l, `"type":"replaced"`) {
					sawText = true
				}
			}
		case <-deadline:
			t.Fatal("no event of text on /events within 20 s")
		}
	}
}
