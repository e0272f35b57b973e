// Package discover finds the host's plugins and the files they are made
// of: the scan of the plugins folder (ScanDir: executables, drop-in
// declarations and their servers, policy files, which file claims which
// name), the watcher that turns the folder's changes into paths for the
// host to sync (Watcher), a plugin file as found (FileRef, FileStamp),
// its policy file and the effective policy (PolicyRef, Policy,
// ResolvePolicy), the lock a Locked host enforces (Pins), and the
// host-owned state folder of binary copies and sockets (StateDir). It
// imports host/core and no other package under host/; package host
// (the Host, its call path and routing) imports it.
package discover
