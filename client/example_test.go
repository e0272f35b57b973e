package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/opentool-host/opentool-host/client"
	"github.com/opentool-host/opentool-host/frontend/frontdoor"
	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
)

// Example calls the reference mock tool served by opentool-host: the
// version, a call, a streaming call, a tool error and a missing API key.
func Example() {
	baseURL, stop := startExampleServer() // like `opentool-host run --dir plugins --api-key my-key`
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client.New(client.WithBaseURL(baseURL), client.WithAPIKey("my-key"))

	v, err := c.Version(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("server version", v.Version)

	ret, err := c.Call(ctx, client.FunctionCall{ID: "callId-0", Name: "count", Arguments: map[string]any{}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ret.ID, "count =", ret.Result["count"])

	err = c.StreamCall(ctx, client.FunctionCall{Name: "sequentiallyRead"}, func(item client.ToolReturn) error {
		fmt.Println("item:", item.Result["data"])
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}

	_, err = c.Call(ctx, client.FunctionCall{Name: "run"})
	var callErr *client.CallError
	if errors.As(err, &callErr) {
		fmt.Printf("run failed with code %d: %s\n", callErr.Code, callErr.Message)
	}

	_, err = client.New(client.WithBaseURL(baseURL)).Version(ctx) // no API key
	var authErr *client.UnauthorizedError
	fmt.Println("without a key:", errors.As(err, &authErr))

	// Output:
	// server version 1.0.0
	// callId-0 count = 2
	// item: Hello
	// item: World
	// run failed with code 500: run failed: the mock tool's run always fails
	// without a key: true
}

// startExampleServer builds the mock plugin, runs a host on it in-process
// behind the HTTP API with API key "my-key", and returns the OpenTool base
// URL and a function that stops everything.
func startExampleServer() (string, func()) {
	_, file, _, _ := runtime.Caller(0)
	dir, err := os.MkdirTemp("", "opentool-example-")
	if err != nil {
		log.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "opentool-plugin-mock"), "./plugins/mock")
	build.Dir = filepath.Dir(filepath.Dir(file)) // the repository root
	if out, err := build.CombinedOutput(); err != nil {
		log.Fatalf("go build ./plugins/mock: %v\n%s", err, out)
	}
	h, err := host.New(core.Config{Dir: dir})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.Start(ctx); err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(frontdoor.KeyedHandler([]string{"my-key"}, opentoolapi.New(h, opentoolapi.Config{Version: "1.0.0"}).Routes()...))
	return srv.URL + opentoolapi.BasePath, func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.Close(ctx)
		_ = os.RemoveAll(dir)
	}
}

// ExampleClient_CallTask runs a long call as a task: the host answers
// with a task once the call has run for its --task-after (1 s by
// default), Wait polls it until it ends, and the task id may be kept to
// resume polling later, from another process or through another replica
// sharing the host's --task-store. (Not run: it needs a host serving a
// slow function, transcode here.)
func ExampleClient_CallTask() {
	ctx := context.Background()
	c := client.New(client.WithBaseURL("http://127.0.0.1:9627/opentool"), client.WithAPIKey("my-key"))

	task, err := c.CallTask(ctx, client.FunctionCall{Name: "transcode", Arguments: map[string]any{"file": "talk.mp4"}})
	if err != nil {
		log.Fatal(err) // the request failed: no key, host down, ...
	}
	if !task.Done() {
		fmt.Println("running as task", task.ID, "poll every", task.PollInterval)
	}
	ret, err := task.Wait(ctx) // or task.Cancel(ctx); c.Task(id).Wait(ctx) resumes by id
	var cancelled *client.TaskCancelledError
	switch {
	case errors.As(err, &cancelled):
		fmt.Println("cancelled:", cancelled.Message)
	case err != nil:
		log.Fatal(err) // the call's *client.CallError, or the polling's error
	default:
		fmt.Println(ret.Result)
	}
}
