package pluginsdk_test

// TestSDKStrictness runs the shared table of argument cases
// (testdata/sdk-strictness.json) against the strictness fixture of each
// plugin SDK (testkit/plugins/sdkstrict: the Go binary, the Python
// and the Node script), each started as a real go-plugin subprocess and
// called directly over the wire, with no host in between: what is
// refused is refused by the SDK itself. A language whose runtime or SDK
// packages are missing skips, saying why.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"

	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/protocol/argcheck"
	"github.com/opentool-host/opentool-host/protocol/opentool"
	"github.com/opentool-host/opentool-host/testkit"
)

// strictTable is testdata/sdk-strictness.json.
type strictTable struct {
	About     string                     `json:"about"`
	Rules     map[string]string          `json:"rules"`
	Functions map[string]json.RawMessage `json:"functions"`
	Cases     []strictCase               `json:"cases"`
}

// strictCase is one row of the table.
type strictCase struct {
	Name     string `json:"name"`
	Function string `json:"function"`
	// Args are the arguments, verbatim; Raw, when set, the bytes sent
	// instead (not JSON, or a member named twice).
	Args json.RawMessage `json:"args"`
	Raw  *string         `json:"raw"`
	Rule string          `json:"rule"`
	// Host is "accepts" when the host's validator lets the case through.
	Host   string          `json:"host"`
	Accept json.RawMessage `json:"accept"`
	Refuse *struct {
		Code int      `json:"code"`
		Path string   `json:"path"`
		Says []string `json:"says"`
	} `json:"refuse"`
}

// args returns the bytes the case sends (nil for none).
func (c strictCase) args() []byte {
	if c.Raw != nil {
		if *c.Raw == "" {
			return nil
		}
		return []byte(*c.Raw)
	}
	return c.Args
}

func loadStrictTable(t *testing.T) strictTable {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testkit.RepoRoot(t), "testdata", "sdk-strictness.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tab strictTable
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tab); err != nil {
		t.Fatalf("testdata/sdk-strictness.json: %v", err)
	}
	seen := map[string]bool{}
	for _, c := range tab.Cases {
		switch {
		case seen[c.Name]:
			t.Fatalf("case %s: named twice", c.Name)
		case tab.Functions[c.Function] == nil:
			t.Fatalf("case %s: no function %q", c.Name, c.Function)
		case (c.Accept == nil) == (c.Refuse == nil):
			t.Fatalf("case %s: give exactly one of accept and refuse", c.Name)
		case (c.Raw == nil) == (c.Args == nil):
			t.Fatalf("case %s: give exactly one of args and raw", c.Name)
		case c.Rule != "" && tab.Rules[c.Rule] == "":
			t.Fatalf("case %s: no rule %q", c.Name, c.Rule)
		case c.Host != "" && (c.Host != "accepts" || c.Refuse == nil):
			t.Fatalf("case %s: host is \"accepts\", for a refused case only", c.Name)
		}
		seen[c.Name] = true
	}
	return tab
}

// strictFixture is one SDK's strictness fixture.
type strictFixture struct {
	lang string
	// command returns the command that runs the fixture, or why it
	// cannot run here.
	command func(t *testing.T, root string) (*exec.Cmd, string)
}

// pyInterpreter is the interpreter the Python fixture's shebang names.
const pyInterpreter = "/usr/bin/python3"

var strictFixtures = []strictFixture{
	{lang: "go", command: func(t *testing.T, root string) (*exec.Cmd, string) {
		return exec.Command(testkit.Build(t, "./testkit/plugins/sdkstrict")), ""
	}},
	{lang: "python", command: func(t *testing.T, root string) (*exec.Cmd, string) {
		if out, err := exec.Command(pyInterpreter, "-c", "import grpc, google.protobuf").CombinedOutput(); err != nil {
			return nil, fmt.Sprintf("Python plugin SDK unavailable: %s cannot import grpc (run make deps-python as root to install python3-grpcio): %v %s",
				pyInterpreter, err, bytes.TrimSpace(out))
		}
		cmd := exec.Command(filepath.Join(root, "testkit", "plugins", "sdkstrict", "opentool-plugin-pystrict"))
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "OPENTOOL_PYSTRICT_SDK=" + filepath.Join(root, "pluginsdk", "python")}
		return cmd, ""
	}},
	{lang: "node", command: func(t *testing.T, root string) (*exec.Cmd, string) {
		node, err := exec.LookPath("node")
		if err != nil {
			return nil, "Node plugin SDK unavailable: no node on PATH (install Node.js >= 18, then make deps-node)"
		}
		sdk := filepath.Join(root, "pluginsdk", "node")
		if out, err := exec.Command(node, "-e", `require(process.argv[1])`, sdk).CombinedOutput(); err != nil {
			return nil, fmt.Sprintf("Node plugin SDK unavailable: %s cannot load %s (run make deps-node to npm ci @grpc/grpc-js): %v %s",
				node, sdk, err, bytes.TrimSpace(out))
		}
		cmd := exec.Command(filepath.Join(root, "testkit", "plugins", "sdkstrict", "opentool-plugin-nodestrict"))
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "OPENTOOL_NODESTRICT_SDK=" + sdk}
		return cmd, ""
	}},
}

// startStrictFixture starts cmd as a go-plugin plugin and returns the wire
// client the host would use.
func startStrictFixture(t *testing.T, cmd *exec.Cmd) (*wire.Client, *testkit.SyncBuffer) {
	t.Helper()
	stderr := &testkit.SyncBuffer{}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		Plugins:          wire.PluginSet(nil),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Cmd:              cmd,
		AutoMTLS:         true, // as the host: the SDK serves only over AutoMTLS
		SkipHostEnv:      true,
		Stderr:           stderr,
		Logger:           hclog.NewNullLogger(),
		StartTimeout:     60 * time.Second,
	})
	t.Cleanup(client.Kill)
	rpc, err := client.Client()
	if err != nil {
		t.Fatalf("handshake: %v\n%s", err, stderr.String())
	}
	raw, err := rpc.Dispense(wire.PluginName)
	if err != nil {
		t.Fatal(err)
	}
	return raw.(*wire.Client), stderr
}

func TestSDKStrictness(t *testing.T) {
	tab := loadStrictTable(t)
	root := testkit.RepoRoot(t)
	for _, fx := range strictFixtures {
		t.Run(fx.lang, func(t *testing.T) {
			cmd, why := fx.command(t, root)
			if why != "" {
				t.Skip(why)
			}
			c, stderr := startStrictFixture(t, cmd)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			doc := loadStrictDocument(t, ctx, c, tab)
			var failed []string
			for _, tc := range tab.Cases {
				if msg := runStrictCase(ctx, c, tc); msg != "" {
					failed = append(failed, tc.Name)
					t.Errorf("%s: %s(%s): %s", tc.Name, tc.Function, tc.args(), msg)
				}
				if msg := hostAgrees(doc, tc); msg != "" {
					t.Errorf("%s: the host's validator on this fixture's document: %s", tc.Name, msg)
				}
			}
			if len(failed) > 0 {
				t.Logf("%s SDK: %d of %d cases failed: %s\nplugin stderr:\n%s", fx.lang, len(failed), len(tab.Cases),
					strings.Join(failed, " "), stderr.String())
			}
		})
	}
}

// loadStrictDocument loads the fixture's OpenTool document and checks
// that it declares the table's functions.
func loadStrictDocument(t *testing.T, ctx context.Context, c *wire.Client, tab strictTable) *opentool.OpenTool {
	t.Helper()
	raw, err := c.Load(ctx)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	doc, err := opentool.Parse(raw)
	if err != nil {
		t.Fatalf("Load: %v\n%s", err, raw)
	}
	for name := range tab.Functions {
		if doc.Function(name) == nil {
			t.Fatalf("the fixture does not declare %q: %s", name, raw)
		}
	}
	return doc
}

// runStrictCase calls the case's function and says how the outcome
// differs from the table ("" when it does not).
func runStrictCase(ctx context.Context, c *wire.Client, tc strictCase) string {
	out, err := testkit.WireInvoke(ctx, c, tc.Function, tc.args(), false)
	if tc.Refuse != nil {
		var te *wire.ToolError
		if !errors.As(err, &te) {
			return fmt.Sprintf("accepted (%s %v), want refused with code %d", bytes.Join(out, nil), err, tc.Refuse.Code)
		}
		if te.Code != tc.Refuse.Code {
			return fmt.Sprintf("refused with code %d (%q), want code %d", te.Code, te.Message, tc.Refuse.Code)
		}
		var missing []string
		for _, s := range tc.Refuse.Says {
			if !strings.Contains(te.Message, s) {
				missing = append(missing, s)
			}
		}
		if len(missing) > 0 {
			return fmt.Sprintf("refused with %q, which does not say %q", te.Message, missing)
		}
		return ""
	}
	if err != nil {
		return fmt.Sprintf("refused (%v), want accepted with %s", err, tc.Accept)
	}
	if len(out) != 1 {
		return fmt.Sprintf("%d results, want 1", len(out))
	}
	if !sameJSON(out[0], tc.Accept) {
		return fmt.Sprintf("result %s, want %s", out[0], tc.Accept)
	}
	return ""
}

// hostAgrees checks the case with the host's validator (argcheck) on the
// fixture's own declaration of the function: the host accepts what the
// table accepts (and what it marks host: accepts), and refuses the rest
// with a fault at the table's path. "" when it agrees.
func hostAgrees(doc *opentool.OpenTool, tc strictCase) string {
	fn := doc.Function(tc.Function)
	v, err := argcheck.Compile(fn)
	if err != nil {
		return err.Error()
	}
	err = v.Validate(tc.args())
	if tc.Refuse == nil || tc.Host == "accepts" {
		if err != nil {
			return fmt.Sprintf("refuses: %v", err)
		}
		return ""
	}
	var ae *argcheck.Error
	if !errors.As(err, &ae) {
		return fmt.Sprintf("accepts (%v), want a fault at %q", err, tc.Refuse.Path)
	}
	for _, f := range ae.Faults {
		if f.Path == tc.Refuse.Path {
			return ""
		}
	}
	return fmt.Sprintf("faults %+v, none at %q", ae.Faults, tc.Refuse.Path)
}

// sameJSON reports whether a and b are the same JSON value, numbers
// compared by value (2 is 2.0, 1e3 is 1000).
func sameJSON(a, b []byte) bool {
	va, erra := decodeNumbers(a)
	vb, errb := decodeNumbers(b)
	return erra == nil && errb == nil && sameValue(va, vb)
}

func decodeNumbers(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

func sameValue(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		n, ok := b.(json.Number)
		if !ok {
			return false
		}
		ra, oka := new(big.Rat).SetString(string(a))
		rb, okb := new(big.Rat).SetString(string(n))
		return oka && okb && ra.Cmp(rb) == 0
	case map[string]any:
		m, ok := b.(map[string]any)
		if !ok || len(m) != len(a) {
			return false
		}
		for k, v := range a {
			w, ok := m[k]
			if !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	case []any:
		s, ok := b.([]any)
		if !ok || len(s) != len(a) {
			return false
		}
		for i := range a {
			if !sameValue(a[i], s[i]) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}
