// Command plugin is the floor benchmark's bare go-plugin gRPC echo plugin
// (see package floor).
package main

import "github.com/opentool-host/opentool-host/bench/floor"

func main() { floor.Serve() }
