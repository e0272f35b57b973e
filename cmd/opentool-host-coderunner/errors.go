package main

import (
	"errors"
	"strings"

	"github.com/dop251/goja"
	"github.com/dop251/goja/file"

	"github.com/opentool-host/opentool-host/internal/coderun"
)

// syntaxError is the program's compile error with its position.
func (p *program) syntaxError(err error) *coderun.ProgramError {
	pe := &coderun.ProgramError{Kind: "syntax", Message: err.Error()}
	var se *goja.CompilerSyntaxError
	if errors.As(err, &se) {
		pe.Message = se.Message
		if se.File != nil && se.Offset > 0 {
			p.at(pe, se.File.Position(se.Offset))
		}
	}
	// The parser's errors say "program.js: Line L:C MESSAGE".
	if i := strings.Index(pe.Message, "Line "); pe.Line == 0 && i >= 0 {
		var pos file.Position
		if n, _ := scanInts(pe.Message[i+len("Line "):], &pos.Line, &pos.Column); n == 2 {
			p.at(pe, pos)
		}
		pe.Message = strings.TrimPrefix(pe.Message, "program.js: ")
	}
	return pe
}

// runtimeError is the error that ended the program: a limit reached
// (the interrupt's ProgramError), or an uncaught exception with the
// position of its innermost frame in the program.
func (p *program) runtimeError(err error) *coderun.ProgramError {
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		pe, ok := ie.Value().(*coderun.ProgramError)
		if !ok {
			pe = &coderun.ProgramError{Kind: "runtime", Message: ie.String()}
		}
		p.atStack(pe, ie.Stack())
		return pe
	}
	pe := &coderun.ProgramError{Kind: "runtime", Message: err.Error()}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		pe.Message = ex.Value().String()
		p.atStack(pe, ex.Stack())
	}
	var rj *rejected
	if errors.As(err, &rj) {
		pe.Message = "Uncaught (in promise) " + rj.v.String()
		if obj, ok := rj.v.(*goja.Object); ok {
			if st, ok := obj.Get("stack").Export().(string); ok {
				p.atStackText(pe, st)
			}
		}
	}
	return pe
}

// atStack sets pe's position from the first frame in the program.
func (p *program) atStack(pe *coderun.ProgramError, stack []goja.StackFrame) {
	for _, f := range stack {
		if pos := f.Position(); pos.Filename == "program.js" && pos.Line > 0 {
			p.at(pe, pos)
			return
		}
	}
}

// atStackText sets pe's position from a stack's text ("at ...
// (program.js:3:7(12))"), for an error that went through a promise.
func (p *program) atStackText(pe *coderun.ProgramError, stack string) {
	i := strings.Index(stack, "program.js:")
	if i < 0 {
		return
	}
	var pos file.Position
	rest := stack[i+len("program.js:"):]
	if n, _ := scanInts(rest, &pos.Line, &pos.Column); n == 2 {
		pos.Filename = "program.js"
		p.at(pe, pos)
	}
}

// scanInts reads "L:C" from s into l and c and returns how many it read.
func scanInts(s string, l, c *int) (int, error) {
	n := 0
	for _, dst := range []*int{l, c} {
		v, i := 0, 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			v = v*10 + int(s[i]-'0')
			i++
		}
		if i == 0 {
			return n, nil
		}
		*dst, n = v, n+1
		s = strings.TrimPrefix(s[i:], ":")
	}
	return n, nil
}

// at sets pe's line, column (line 1 of a wrapped program without the
// wrapper) and the program's text of that line.
func (p *program) at(pe *coderun.ProgramError, pos file.Position) {
	pe.Line, pe.Column = pos.Line, pos.Column
	if p.wrapped && pos.Line == 1 {
		pe.Column = max(pe.Column-len(asyncOpen), 1)
	}
	lines := strings.Split(p.run0.Code, "\n")
	if pos.Line >= 1 && pos.Line <= len(lines) {
		src := strings.TrimRight(lines[pos.Line-1], "\r")
		if len(src) > 200 {
			src = src[:200] + "..."
		}
		pe.Source = src
	}
}
