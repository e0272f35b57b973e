package host_test

import (
	"os/exec"
	"strconv"
)

var (
	execCommand = exec.Command
	strconvItoa = strconv.Itoa
)
