package main

import (
	"context"
	"testing"

	"github.com/opentool-host/opentool-host/testkit"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

func TestDocument(t *testing.T) {
	doc, err := newToolkit().Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := opentool.Validate(doc); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	want := []string{"add", "subtract", "multiply", "divide"}
	if len(doc.Functions) != len(want) {
		t.Fatalf("functions = %+v", doc.Functions)
	}
	for i, f := range doc.Functions {
		if f.Name != want[i] {
			t.Errorf("function %d = %q, want %q", i, f.Name, want[i])
		}
		if len(f.Parameters) != 2 || f.Parameters[0].Name != "a" || f.Parameters[1].Name != "b" ||
			!f.Parameters[0].Required || !f.Parameters[1].Required ||
			f.Parameters[0].Schema.Type != opentool.TypeNumber || f.Parameters[0].Description != "First operand" {
			t.Errorf("%s parameters = %+v", f.Name, f.Parameters)
		}
		if f.Return == nil || f.Return.Schema.Properties["result"] == nil {
			t.Errorf("%s return = %+v", f.Name, f.Return)
		}
	}
}

func TestOperations(t *testing.T) {
	tk := newToolkit()
	for _, tc := range []struct{ name, args, want string }{
		{"add", `{"a":1.5,"b":2}`, `{"result":3.5}`},
		{"subtract", `{"a":1,"b":3}`, `{"result":-2}`},
		{"multiply", `{"a":-4,"b":2.5}`, `{"result":-10}`},
		{"divide", `{"a":7,"b":2}`, `{"result":3.5}`},
	} {
		out, err := tk.CallJSON(context.Background(), tc.name, []byte(tc.args))
		if err != nil || string(out) != tc.want {
			t.Errorf("%s(%s) = %s, %v; want %s", tc.name, tc.args, out, err, tc.want)
		}
	}
}

func TestErrors(t *testing.T) {
	tk := newToolkit()
	ctx := context.Background()
	_, err := tk.CallJSON(ctx, "divide", []byte(`{"a":1,"b":0}`))
	testkit.WantToolError(t, err, pluginsdk.CodeInvalidArguments, "division by zero")
	_, err = tk.CallJSON(ctx, "add", []byte(`{"a":"1","b":0}`))
	testkit.WantToolError(t, err, pluginsdk.CodeInvalidArguments, `"a"`)
	_, err = tk.CallJSON(ctx, "add", []byte(`{"a":1}`))
	testkit.WantToolError(t, err, pluginsdk.CodeInvalidArguments, `"b"`)
	_, err = tk.CallJSON(ctx, "multiply", []byte(`{"a":1e308,"b":10}`))
	testkit.WantToolError(t, err, pluginsdk.CodeToolFailure, "out of the range")
	_, err = tk.CallJSON(ctx, "power", []byte(`{"a":1,"b":2}`))
	testkit.WantToolError(t, err, pluginsdk.CodeNotFound, `"power"`)
}
