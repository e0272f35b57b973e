package main

import (
	"context"
	"math"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// operands are the arguments of every calculator function.
type operands struct {
	A float64 `json:"a" jsonschema:"description=First operand"`
	B float64 `json:"b" jsonschema:"description=Second operand"`
}

// result is what every calculator function returns.
type result struct {
	Result float64 `json:"result" jsonschema:"description=The result of the operation"`
}

// newToolkit returns the calculator's functions as a Toolkit.
func newToolkit() *pluginsdk.Toolkit {
	tk := pluginsdk.NewToolkit(opentool.Info{
		Title:       "Calculator",
		Version:     "1.0.0",
		Description: "Basic arithmetic on two numbers.",
	})
	return tk.Add(
		pluginsdk.Func("add", "Add two numbers: a + b.", binary(func(a, b float64) float64 { return a + b })),
		pluginsdk.Func("subtract", "Subtract b from a: a - b.", binary(func(a, b float64) float64 { return a - b })),
		pluginsdk.Func("multiply", "Multiply two numbers: a * b.", binary(func(a, b float64) float64 { return a * b })),
		pluginsdk.Func("divide", "Divide a by b: a / b. b must not be 0.", divide),
	)
}

// binary adapts op to a toolkit function. A result too large for a
// float64 (±Inf) is a code-500 error, as JSON cannot carry it.
func binary(op func(a, b float64) float64) func(context.Context, operands) (result, error) {
	return func(_ context.Context, in operands) (result, error) {
		r := op(in.A, in.B)
		if math.IsInf(r, 0) || math.IsNaN(r) {
			return result{}, pluginsdk.ToolFailure("result of %g and %g is out of the range of a 64-bit float", in.A, in.B)
		}
		return result{Result: r}, nil
	}
}

// divide returns a / b; b == 0 is a code-400 error.
func divide(ctx context.Context, in operands) (result, error) {
	if in.B == 0 {
		return result{}, pluginsdk.InvalidArguments("division by zero: b must not be 0")
	}
	return binary(func(a, b float64) float64 { return a / b })(ctx, in)
}
