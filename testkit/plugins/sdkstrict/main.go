// Command sdkstrict is the Go SDK's argument strictness fixture: it
// declares with pluginsdk.Func the functions of
// testdata/sdk-strictness.json (flat, nested, open, count), as do its
// Python and Node twins beside it (opentool-plugin-pystrict,
// opentool-plugin-nodestrict). Each function returns what it received,
// so pluginsdk's TestSDKStrictness sees exactly what the SDK let through
// and what the function got.
package main

import (
	"context"
	"strconv"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// Flat is flat's input: scalars, optional ones as pointers so that the
// echo leaves out what the call left out.
type Flat struct {
	Name   string   `json:"name"`
	Age    *int64   `json:"age,omitempty"`
	Score  *float64 `json:"score,omitempty"`
	Active *bool    `json:"active,omitempty"`
	Mode   *string  `json:"mode,omitempty" jsonschema:"enum=fast,enum=safe"`
}

// Geo is a point; both members are required.
type Geo struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

// Address is nested's required object.
type Address struct {
	Street string `json:"street"`
	Zip    *int64 `json:"zip,omitempty"`
	Geo    *Geo   `json:"geo,omitempty"`
}

// Item is one element of nested's array of objects.
type Item struct {
	ID  int64  `json:"id"`
	Qty *int64 `json:"qty,omitempty"`
}

// Nested is nested's input: objects in objects and an array of objects.
type Nested struct {
	Address Address   `json:"address"`
	Items   *[]Item   `json:"items,omitempty"`
	Tags    *[]string `json:"tags,omitempty"`
}

// Open is open's input: a free-form object (any members) and a string.
type Open struct {
	Meta  *map[string]any `json:"meta,omitempty"`
	Label *string         `json:"label,omitempty"`
}

// CountIn is count's input.
type CountIn struct {
	N int64 `json:"n"`
}

// CountOut is count's result: n and n as Go writes it.
type CountOut struct {
	N    int64  `json:"n"`
	Text string `json:"text"`
}

func main() {
	pluginsdk.Serve(pluginsdk.NewToolkit(opentool.Info{Title: "sdkstrict", Version: "1.0.0"}).Add(
		pluginsdk.Func("flat", "Returns its arguments.", func(_ context.Context, in Flat) (Flat, error) { return in, nil }),
		pluginsdk.Func("nested", "Returns its arguments.", func(_ context.Context, in Nested) (Nested, error) { return in, nil }),
		pluginsdk.Func("open", "Returns its arguments.", func(_ context.Context, in Open) (Open, error) { return in, nil }),
		pluginsdk.Func("count", "Returns n and its text.", func(_ context.Context, in CountIn) (CountOut, error) {
			return CountOut{N: in.N, Text: strconv.FormatInt(in.N, 10)}, nil
		}),
	))
}
