// Command garbage writes garbage to stdout instead of the go-plugin
// handshake line, then waits.
package main

import (
	"fmt"
	"time"
)

func main() {
	fmt.Println("hello, I am not a plugin handshake")
	time.Sleep(30 * time.Second)
}
