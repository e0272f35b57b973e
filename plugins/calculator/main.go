// Command opentool-plugin-calculator is an opentool-host plugin with the
// four arithmetic operations add, subtract, multiply and divide over two
// numbers a and b, each returning {"result": number}. It is the example of
// pluginsdk.Toolkit.
package main

import "github.com/opentool-host/opentool-host/pluginsdk"

func main() { pluginsdk.Serve(newToolkit()) }
