package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"sync"
	"testing"

	"github.com/opentool-host/opentool-host/testkit"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

func TestDocumentIsTheFixture(t *testing.T) {
	fixture := testkit.FixturePath(t, "reference-mock-tool.json")
	want, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	var got, exp any
	if err := json.Unmarshal(document, &got); err != nil {
		t.Fatalf("embedded opentool.json: %v", err)
	}
	if err := json.Unmarshal(want, &exp); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	if !reflect.DeepEqual(got, exp) {
		t.Errorf("embedded opentool.json differs from %s", fixture)
	}
}

func TestLoad(t *testing.T) {
	doc, err := newMockTool().Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := opentool.Validate(doc); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	var names []string
	for _, f := range doc.Functions {
		names = append(names, f.Name)
		if _, ok := nonStreaming[f.Name]; ok == f.IsStream() {
			t.Errorf("function %q: stream %v disagrees with the implementation", f.Name, f.IsStream())
		}
	}
	want := []string{"count", "create", "read", "sequentiallyRead", "update", "delete", "run"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("functions = %v, want %v", names, want)
	}
}

// call runs name and returns the result, failing the test on an error.
func call(t *testing.T, m *mockTool, name string, args map[string]any) map[string]any {
	t.Helper()
	out, err := m.Call(context.Background(), name, args)
	if err != nil {
		t.Fatalf("%s(%v): %v", name, args, err)
	}
	return out
}

func TestCRUD(t *testing.T) {
	m := newMockTool()
	check := func(name string, args, want map[string]any) {
		t.Helper()
		if got := call(t, m, name, args); !reflect.DeepEqual(got, want) {
			t.Errorf("%s(%v) = %v, want %v", name, args, got, want)
		}
	}
	check("count", nil, map[string]any{"count": 2})
	check("read", map[string]any{"id": 0.0}, map[string]any{"text": "Hello"})
	check("read", map[string]any{"id": 1.0}, map[string]any{"text": "World"})
	check("create", map[string]any{"text": "Foo"}, map[string]any{"id": 2})
	check("count", map[string]any{}, map[string]any{"count": 3})
	check("read", map[string]any{"id": json.Number("2")}, map[string]any{"text": "Foo"})
	check("update", map[string]any{"id": 0.0, "text": "Hi"}, map[string]any{"result": "Update successfully."})
	check("read", map[string]any{"id": 0.0}, map[string]any{"text": "Hi"})
	check("delete", map[string]any{"id": 1.0}, map[string]any{"result": "Delete successfully."})
	check("count", nil, map[string]any{"count": 2})
	check("read", map[string]any{"id": 1.0}, map[string]any{"text": "Foo"})
}

func TestInvalidArguments(t *testing.T) {
	m := newMockTool()
	for _, tc := range []struct {
		name     string
		args     map[string]any
		contains string
	}{
		{"create", nil, `missing required parameter "text"`},
		{"create", map[string]any{"text": nil}, `missing required parameter "text"`},
		{"create", map[string]any{"text": 5.0}, `"text" must be a string, got number`},
		{"read", nil, `missing required parameter "id"`},
		{"read", map[string]any{"id": 1.5}, `"id" must be an integer, got 1.5`},
		{"read", map[string]any{"id": "1"}, `"id" must be an integer, got string`},
		{"read", map[string]any{"id": json.Number("1.5")}, `"id" must be an integer`},
		{"read", map[string]any{"id": 2.0}, "id 2 is out of range"},
		{"read", map[string]any{"id": -1.0}, "id -1 is out of range"},
		{"read", map[string]any{"id": 1e300}, "must be an integer"},
		{"update", map[string]any{"id": 0.0}, `missing required parameter "text"`},
		{"update", map[string]any{"text": "x"}, `missing required parameter "id"`},
		{"update", map[string]any{"id": 5.0, "text": "x"}, "out of range"},
		{"delete", map[string]any{"id": true}, `"id" must be an integer, got boolean`},
		{"delete", map[string]any{"id": 2.0}, "out of range"},
	} {
		_, err := m.Call(context.Background(), tc.name, tc.args)
		testkit.WantToolError(t, err, pluginsdk.CodeInvalidArguments, tc.contains)
	}
	// Nothing was changed by the failed calls.
	if got := call(t, m, "count", nil); got["count"] != 2 {
		t.Errorf("count = %v after failed calls, want 2", got["count"])
	}
}

func TestRunFailsAndUnknown(t *testing.T) {
	m := newMockTool()
	_, err := m.Call(context.Background(), "run", nil)
	testkit.WantToolError(t, err, pluginsdk.CodeToolFailure, "run failed")
	_, err = m.Call(context.Background(), "nope", nil)
	testkit.WantToolError(t, err, pluginsdk.CodeNotFound, `"nope"`)
	_, err = m.Call(context.Background(), "sequentiallyRead", nil)
	testkit.WantToolError(t, err, pluginsdk.CodeNotFound, "streamCall")
	err = m.StreamCall(context.Background(), "count", nil, func(map[string]any) error { return nil })
	testkit.WantToolError(t, err, pluginsdk.CodeNotFound, "does not stream")
	err = m.StreamCall(context.Background(), "nope", nil, func(map[string]any) error { return nil })
	testkit.WantToolError(t, err, pluginsdk.CodeNotFound, `"nope"`)
}

func TestSequentiallyRead(t *testing.T) {
	m := newMockTool()
	call(t, m, "create", map[string]any{"text": "Third"})
	var got []map[string]any
	err := m.StreamCall(context.Background(), "sequentiallyRead", nil, func(item map[string]any) error {
		got = append(got, item)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{{"data": "Hello"}, {"data": "World"}, {"data": "Third"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("items = %v, want %v", got, want)
	}

	// It stops when the context ends.
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err = m.StreamCall(ctx, "sequentiallyRead", nil, func(map[string]any) error {
		n++
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) || n != 1 {
		t.Errorf("after cancel: err %v after %d items, want context.Canceled after 1", err, n)
	}

	// And when send fails.
	gone := errors.New("gone")
	err = m.StreamCall(context.Background(), "sequentiallyRead", nil, func(map[string]any) error { return gone })
	if !errors.Is(err, gone) {
		t.Errorf("err = %v, want %v", err, gone)
	}
}

func TestConcurrentCreates(t *testing.T) {
	m := newMockTool()
	const n = 50
	ids := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			out, err := m.Call(context.Background(), "create", map[string]any{"text": "x"})
			if err != nil {
				t.Error(err)
				return
			}
			ids <- out["id"].(int)
		})
		wg.Go(func() {
			if err := m.StreamCall(context.Background(), "sequentiallyRead", nil, func(map[string]any) error { return nil }); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	close(ids)
	seen := map[int]bool{}
	for id := range ids {
		if seen[id] || id < 2 || id >= n+2 {
			t.Errorf("bad or duplicate id %d", id)
		}
		seen[id] = true
	}
	if got := call(t, m, "count", nil); got["count"] != n+2 {
		t.Errorf("count = %v, want %d", got["count"], n+2)
	}
}

// TestOverGRPC drives the mock tool through the plugin gRPC service, as the
// host does, with JSON arguments (ids arrive as JSON numbers).
func TestOverGRPC(t *testing.T) {
	c := testkit.WireConn(t, newMockTool())
	ctx := context.Background()
	call := func(name, args string) (string, error) {
		items, err := testkit.WireInvoke(ctx, c, name, []byte(args), false)
		if err != nil || len(items) != 1 {
			return "", err
		}
		return string(items[0]), nil
	}

	doc, err := c.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := opentool.Parse(doc); err != nil {
		t.Fatalf("document over the wire: %v", err)
	}
	for _, tc := range []struct{ name, args, want string }{
		{"count", ``, `{"count":2}`},
		{"create", `{"text":"Foo"}`, `{"id":2}`},
		{"read", `{"id":2}`, `{"text":"Foo"}`},
		{"read", `{"id":2.0}`, `{"text":"Foo"}`},
		{"update", `{"id":0,"text":"Hi"}`, `{"result":"Update successfully."}`},
		{"delete", `{"id":1}`, `{"result":"Delete successfully."}`},
	} {
		out, err := call(tc.name, tc.args)
		if err != nil || out != tc.want {
			t.Errorf("%s(%s) = %s, %v; want %s", tc.name, tc.args, out, err, tc.want)
		}
	}
	_, err = call("read", `{"id":1.5}`)
	testkit.WantToolError(t, err, pluginsdk.CodeInvalidArguments, "must be an integer")
	_, err = call("run", "")
	testkit.WantToolError(t, err, pluginsdk.CodeToolFailure, "run failed")

	var items []string
	raw, err := testkit.WireInvoke(ctx, c, "sequentiallyRead", nil, true)
	for _, b := range raw {
		items = append(items, string(b))
	}
	if err != nil || !reflect.DeepEqual(items, []string{`{"data":"Hi"}`, `{"data":"Foo"}`}) {
		t.Errorf("sequentiallyRead = %v, %v", items, err)
	}
}
