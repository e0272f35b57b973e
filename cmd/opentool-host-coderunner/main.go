// Command opentool-host-coderunner runs one run_code program (host
// --code-mode) and exits: the host starts it through its launcher, like
// a plugin (sandboxed, its own user, its cgroup), reads the program from
// stdin and answers its inner tool calls there (internal/coderun). It
// embeds the goja JavaScript engine and nothing of the host: a small
// binary, whose only way out is its stdout to the host.
package main

import (
	"bufio"
	"fmt"
	"os"

	"github.com/opentool-host/opentool-host/internal/coderun"
)

// maxMessage bounds one message from the host (a program, a reply), in bytes.
const maxMessage = 32 << 20

func main() {
	if err := coderun.Write(os.Stdout, coderun.FromRunner{Ready: true}); err != nil {
		os.Exit(1)
	}
	in := coderun.NewReader(bufio.NewReader(os.Stdin), maxMessage)
	var msg coderun.ToRunner
	if err := in.Read(&msg); err != nil || msg.Run == nil {
		fmt.Fprintf(os.Stderr, "coderunner: no program: %v\n", err)
		os.Exit(2)
	}
	done := newProgram(*msg.Run, in, os.Stdout).run()
	if err := coderun.Write(os.Stdout, coderun.FromRunner{Done: done}); err != nil {
		os.Exit(1)
	}
}
