package access

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"reflect"
	"regexp"
	"strings"

	"github.com/opentool-host/opentool-host/internal/strictjson"
)

// File is an API keys file (--api-keys-file), decoded exactly: unknown
// members, duplicate members and wrong types are faults with their JSON
// path.
//
//	{"keys": [
//	  {"name": "ci", "sha256": "<64 hex digits>", "allow": ["add", "plugin:calc*"],
//	   "rate": {"per_second": 5, "burst": 10}},
//	  {"name": "admin", "key": "a-long-random-secret", "allow": ["*"]}
//	]}
type File struct {
	// Keys are the accepted keys, each with what it may call.
	Keys []KeyDecl `json:"keys"`
	// Tokens are the rules that grant OAuth access tokens (--oauth-issuer)
	// what they may call, by scope and by claim (TokenRule). Optional.
	Tokens []TokenRule `json:"tokens,omitempty"`
}

// KeyDecl is one key of a File.
type KeyDecl struct {
	// Name names the key in logs and call records (never the key itself):
	// 1 to 64 of [A-Za-z0-9_.@-], unique in the file.
	Name string `json:"name"`
	// Key is the key as clients send it ("Authorization: Bearer KEY").
	// Exactly one of Key and SHA256.
	Key string `json:"key,omitempty"`
	// SHA256 is the hex sha256 of the key, so that the file holds no
	// secret: printf %s KEY | sha256sum.
	SHA256 string `json:"sha256,omitempty"`
	// Allow lists what the key may see and call: glob patterns
	// (path.Match: *, ?, [a-z]) over function names, or "plugin:GLOB" over
	// plugin names. Required; [] allows nothing and ["*"] everything.
	Allow *[]string `json:"allow"`
	// Rate, when present, limits the key's calls (listings are not
	// limited).
	Rate *Rate `json:"rate,omitempty"`
}

// Rate is a token bucket (golang.org/x/time/rate): PerSecond calls a
// second on average, bursts of up to Burst calls.
type Rate struct {
	// PerSecond is the sustained rate, calls per second (> 0).
	PerSecond float64 `json:"per_second"`
	// Burst is how many calls may come at once (>= 1). Default: PerSecond
	// rounded up, at least 1.
	Burst int `json:"burst,omitempty"`
}

// Fault is a fault of a keys file: its JSON path ("$.keys[2].allow[0]")
// and what is wrong. It never holds a key or a key's hash.
type Fault = strictjson.Fault

// MaxFileBytes is the largest keys file read (1 MiB).
const MaxFileBytes = 1 << 20

// PluginPrefix marks an allow pattern over plugin names.
const PluginPrefix = "plugin:"

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,64}$`)

// ParseFile decodes and checks a keys file, hand-written JSON
// (strictjson.ReadHandWritten: comments and trailing commas allowed).
// Errors: a *Fault, with its line and column, for the first fault (JSON
// syntax, a duplicate or unknown member, a wrong type, a
// missing or bad name, key, sha256 or allow pattern, a bad rate, two
// entries with the same name or the same key).
func ParseFile(data []byte) (*File, error) {
	return strictjson.ParseHandWritten(data, MaxFileBytes, parseTree)
}

// parseTree is ParseFile of h, read; its faults not yet located.
func parseTree(h *strictjson.HandWritten) (*File, error) {
	tree, err := h.Check(reflect.TypeFor[File]())
	if err != nil {
		return nil, err
	}
	list, ok := tree.(map[string]any)["keys"].([]any)
	if !ok {
		return nil, &Fault{Path: "$.keys", Message: "is required: an array of keys"}
	}
	f := &File{Keys: make([]KeyDecl, len(list))}
	// Each entry is decoded on its own so that a type fault names its
	// index.
	for i, v := range list {
		p := fmt.Sprintf("$.keys[%d]", i)
		b, _ := json.Marshal(v) // a decoded tree always encodes
		if err := json.Unmarshal(b, &f.Keys[i]); err != nil {
			return nil, strictjson.TypeFault(p, err)
		}
	}
	if f.Tokens, err = parseTokens(tree.(map[string]any)["tokens"]); err != nil {
		return nil, err
	}
	return f, f.check()
}

// plainNameRE matches the names of the plain keys (Config.Keys:
// "api-key-N"), which no key of a file may take: tasks and audit records
// know a key by its name.
var plainNameRE = regexp.MustCompile(`^api-key-[0-9]+$`)

// check checks every entry of f and that names and keys are unique, and
// that no name is one of the plain keys' (plainNameRE).
func (f *File) check() error {
	names := map[string]int{}
	sums := map[[sha256.Size]byte]int{}
	for i := range f.Keys {
		k := &f.Keys[i]
		p := fmt.Sprintf("$.keys[%d]", i)
		if err := k.check(p); err != nil {
			return err
		}
		if plainNameRE.MatchString(k.Name) {
			return &Fault{Path: p + ".name", Message: fmt.Sprintf("%q is the name of a key given with --api-key or OPENTOOL_API_KEYS "+
				"(api-key-N names the Nth of them): key names are unique across every source, so name this key otherwise", k.Name)}
		}
		if j, dup := names[k.Name]; dup {
			return &Fault{Path: p + ".name", Message: fmt.Sprintf("%q is also the name of $.keys[%d]", k.Name, j)}
		}
		names[k.Name] = i
		sum := k.sum()
		if j, dup := sums[sum]; dup {
			return &Fault{Path: p, Message: fmt.Sprintf("the same key as $.keys[%d]", j)}
		}
		sums[sum] = i
	}
	return checkTokens(f.Tokens)
}

// check checks one entry at path p.
func (k *KeyDecl) check(p string) error {
	if !nameRE.MatchString(k.Name) {
		return &Fault{Path: p + ".name", Message: "is required: 1 to 64 of A-Z a-z 0-9 _ . @ -"}
	}
	switch {
	case (k.Key == "") == (k.SHA256 == ""):
		return &Fault{Path: p, Message: `must have exactly one of "key" and "sha256"`}
	case k.Key != "" && strings.TrimSpace(k.Key) != k.Key || strings.ContainsAny(k.Key, " \t\r\n"):
		return &Fault{Path: p + ".key", Message: "must not contain spaces (clients send it in an HTTP header)"}
	case k.SHA256 != "":
		if b, err := hex.DecodeString(k.SHA256); err != nil || len(b) != sha256.Size {
			return &Fault{Path: p + ".sha256", Message: "must be 64 hex digits (the sha256 of the key)"}
		}
	}
	if err := checkAllow(p, k.Allow); err != nil {
		return err
	}
	return checkRate(p, k.Rate)
}

// checkAllow checks the "allow" of the entry at path p (required).
func checkAllow(p string, allow *[]string) error {
	if allow == nil {
		return &Fault{Path: p + ".allow", Message: `is required: [] allows nothing, ["*"] everything`}
	}
	for j, pat := range *allow {
		if err := checkPattern(pat); err != nil {
			return &Fault{Path: fmt.Sprintf("%s.allow[%d]", p, j), Message: err.Error()}
		}
	}
	return nil
}

// checkRate checks the "rate" of the entry at path p (nil: none).
func checkRate(p string, r *Rate) error {
	if r == nil {
		return nil
	}
	if !(r.PerSecond > 0) || math.IsInf(r.PerSecond, 0) {
		return &Fault{Path: p + ".rate.per_second", Message: "must be a number above 0"}
	}
	if r.Burst < 0 {
		return &Fault{Path: p + ".rate.burst", Message: "must be at least 1"}
	}
	return nil
}

// checkPattern checks one allow pattern.
func checkPattern(pat string) error {
	glob, isPlugin := strings.CutPrefix(pat, PluginPrefix)
	if glob == "" {
		if isPlugin {
			return errors.New(`"plugin:" needs a plugin name or glob`)
		}
		return errors.New("must not be empty")
	}
	if _, err := path.Match(glob, ""); err != nil {
		return fmt.Errorf("bad glob %q: %v", glob, err)
	}
	return nil
}

// sum is the sha256 of k's key.
func (k *KeyDecl) sum() [sha256.Size]byte {
	if k.Key != "" {
		return sha256.Sum256([]byte(k.Key))
	}
	var s [sha256.Size]byte
	_, _ = hex.Decode(s[:], []byte(k.SHA256)) // checked
	return s
}

// burst is r's burst, defaulted.
func (r *Rate) burst() int {
	if r.Burst > 0 {
		return r.Burst
	}
	return max(1, int(math.Ceil(r.PerSecond)))
}
