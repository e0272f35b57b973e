// Command opentool-plugin-mock is the reference OpenTool mock tool as an
// opentool-host plugin: a CRUD store of texts, starting as ["Hello",
// "World"], with the document of the reference implementation
// (opentool.json, the fixture reference-mock-tool.json).
//
// Functions: count, create(text), read(id), update(id, text), delete(id),
// run (always fails with code 500) and the streaming sequentiallyRead.
package main

import "github.com/opentool-host/opentool-host/pluginsdk"

func main() { pluginsdk.Serve(newMockTool()) }
