package cmdtool

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/opentool-host/opentool-host/protocol/decl"
)

func TestBuildArgvNeverSplitsOrInterprets(t *testing.T) {
	var tmpl []decl.Arg
	if err := json.Unmarshal([]byte(`["prog","-e","{p}","--n={n}",{"flag":"-i","when":"i"},"{opt}","{list}","{{literal}}"]`), &tmpl); err != nil {
		t.Fatal(err)
	}
	hostile := "a b; rm -rf / $(id) `id` \"q\" 'q'\n--help"
	argv, err := buildArgv(tmpl, map[string]any{"p": hostile, "n": 3.0, "i": true, "list": []any{"x y", "-z", 2.5}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"prog", "-e", hostile, "--n=3", "-i", "x y", "-z", "2.5", "{literal}"}
	if !reflect.DeepEqual(argv, want) {
		t.Fatalf("argv = %q\nwant %q", argv, want)
	}
	argv, _ = buildArgv(tmpl, map[string]any{"p": "x", "n": 1.5, "i": false})
	if want := []string{"prog", "-e", "x", "--n=1.5", "{literal}"}; !reflect.DeepEqual(argv, want) {
		t.Fatalf("absent optional and false flag: argv = %q, want %q", argv, want)
	}
}
