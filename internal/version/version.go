// Package version holds the opentool-host version.
package version

// Version is the host's version, "x.y.z", as GET /opentool/version and
// `opentool-host version` report it. Release builds may set it with
// -ldflags "-X github.com/opentool-host/opentool-host/internal/version.Version=1.2.3".
var Version = "0.1.0"
