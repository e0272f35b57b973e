//go:build quickjs

package main

import (
	"fmt"

	"modernc.org/quickjs"
)

// engineName is the engine this binary embeds.
const engineName = "quickjs"

// newEngine returns a fresh QuickJS VM's eval: src run as a script, the
// job queue run (ExecutePendingJobs), its value as a string.
func newEngine() (func(src string) (string, error), func()) {
	vm, err := quickjs.NewVM()
	if err != nil {
		panic(err)
	}
	return func(src string) (string, error) {
		v, err := vm.Eval(src, quickjs.EvalGlobal)
		if err != nil {
			return "", err
		}
		if _, err := vm.ExecutePendingJobs(); err != nil {
			return "", err
		}
		return fmt.Sprint(v), nil
	}, func() { _ = vm.Close() }
}
