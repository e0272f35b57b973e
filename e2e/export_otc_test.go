package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
)

// runCLI runs the opentool-host binary with args and returns its stdout,
// stderr and exit code.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	bin := testkit.Build(t, "./cmd/opentool-host")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

func TestExportCommand(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "mock", "./plugins/mock")

	out, errOut, code := runCLI(t, "export", "--format", "openai-chat", "--strict", "--dir", dir, "--state-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string         `json:"name"`
			Parameters map[string]any `json:"parameters"`
			Strict     bool           `json:"strict"`
		} `json:"function"`
	}
	if err := json.Unmarshal([]byte(out), &tools); err != nil || len(tools) != 7 {
		t.Fatalf("stdout is not 7 tools (%v):\n%s", err, out)
	}
	if f := tools[1].Function; tools[1].Type != "function" || f.Name != "create" || !f.Strict || f.Parameters["additionalProperties"] != false {
		t.Errorf("create: %+v", tools[1])
	}

	// Usage errors exit 2 with a clear message.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "--format", "gemini", "--dir", dir}, `unknown format "gemini": use openai, openai-chat, anthropic or opentool`},
		{[]string{"export", "--format", "anthropic", "--strict", "--dir", dir}, "--strict applies only to --format openai and openai-chat"},
		{[]string{"export", "--format", "openai"}, "give --dir DIR or --url URL"},
	} {
		_, errOut, code := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

// TestRunServesOTCAndExport runs the real binary with an API key: /otc
// and /opentool/export are served, both behind the key, and
// `export --url` reads the running host.
func TestRunServesOTCAndExport(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	hp := startHostProc(t, dir, "--api-key", "k1")

	send := func(method, path, key, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, hp.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/otc/health", "/otc/tools", "/opentool/export?format=openai"} {
		if status, _ := send(http.MethodGet, path, "", ""); status != http.StatusUnauthorized {
			t.Errorf("GET %s without key: HTTP %d, want 401", path, status)
		}
		if status, body := send(http.MethodGet, path, "k1", ""); status != http.StatusOK {
			t.Errorf("GET %s: HTTP %d %s", path, status, body)
		}
	}
	call := `{"request":{"call_id":"c1","tool_id":"Calculator.add@1.0.0","input":{"a":1,"b":2}}}`
	if status, _ := send(http.MethodPost, "/otc/call", "wrong", call); status != http.StatusUnauthorized {
		t.Errorf("POST /otc/call with a wrong key: HTTP %d, want 401", status)
	}
	status, body := send(http.MethodPost, "/otc/call", "k1", call)
	if status != http.StatusOK || !strings.Contains(body, `"call_id":"c1"`) || !strings.Contains(body, `"success":true,"output":{"value":{"result":3}}`) {
		t.Errorf("POST /otc/call: HTTP %d %s", status, body)
	}
	// The OpenTool API still answers next to /otc.
	if status, body := send(http.MethodGet, "/opentool/version", "k1", ""); status != http.StatusOK {
		t.Errorf("GET /opentool/version: HTTP %d %s", status, body)
	}

	out, errOut, code := runCLI(t, "export", "--format", "anthropic", "--url", hp.url, "--api-key", "k1")
	if code != 0 || !strings.Contains(out, `"name": "add"`) || !strings.Contains(out, `"input_schema": {`) {
		t.Errorf("export --url: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if _, errOut, code := runCLI(t, "export", "--format", "anthropic", "--url", hp.url); code != 1 || !strings.Contains(errOut, "HTTP 401") {
		t.Errorf("export --url without key: exit %d, stderr %s", code, errOut)
	}
}
