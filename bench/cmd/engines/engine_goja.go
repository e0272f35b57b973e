//go:build !quickjs

package main

import "github.com/dop251/goja"

// engineName is the engine this binary embeds.
const engineName = "goja"

// newEngine returns a fresh goja runtime's eval: src run as a script
// (goja runs the job queue before RunString returns), its value as a
// string.
func newEngine() (func(src string) (string, error), func()) {
	vm := goja.New()
	return func(src string) (string, error) {
		v, err := vm.RunString(src)
		if err != nil {
			return "", err
		}
		return v.String(), nil
	}, func() {}
}
