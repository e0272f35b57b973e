package sandbox

// What every confined plugin may touch besides Spec.Read and Spec.Write.
// The lists are what a dynamically linked program, a /bin/sh script,
// python3 and node need to start and run (tested by
// TestConfinedInterpreters), and no more: not /etc as a whole (no
// /etc/hostname, /etc/passwd, /etc/shadow, /etc/ssl/private), no home
// folder, no temporary folder, no /proc of other processes. Paths that
// do not exist on a machine are skipped.

// defaultRead: system folders and files a confined plugin may read and
// execute.
var defaultRead = []string{
	// Programs, shared libraries, interpreters and their standard
	// libraries (/usr/lib/python3*, Node's global modules), time zones
	// (/usr/share/zoneinfo), CA certificates linked from /etc/ssl/certs.
	// On merged-/usr systems /bin, /sbin, /lib* are links into /usr.
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	// The dynamic loader's cache and configuration, the local time zone.
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/timezone",
	// Name resolution, needed to connect to a Spec.ConnectTCP port by
	// name.
	"/etc/nsswitch.conf", "/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/gai.conf", "/etc/services", "/etc/protocols",
	// TLS: CA certificates and the OpenSSL configuration, never the
	// private keys of /etc/ssl/private.
	"/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/ca-certificates", "/etc/pki/tls/certs", "/etc/pki/ca-trust/extracted", "/etc/crypto-policies",
	// The plugin's own /proc entry (resolved when the launcher applies
	// the sandbox; the plugin keeps the launcher's pid) and the CPU and
	// memory facts runtimes size themselves by.
	"/proc/self", "/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/sys/devices/system/cpu", "/sys/kernel/mm/transparent_hugepage",
	// Randomness.
	"/dev/urandom", "/dev/random",
}

// defaultDevices: devices a confined plugin may read and write.
var defaultDevices = []string{"/dev/null", "/dev/zero", "/dev/full"}

// DefaultRead returns the system paths every confined plugin (Spec.Confine)
// may read and execute besides Spec.Read: /usr and the /bin, /sbin and
// /lib* folders, the dynamic loader's cache, the local time zone, the name
// resolution files of /etc, CA certificates (/etc/ssl/certs, not
// /etc/ssl/private), the plugin's own /proc/self, CPU and memory facts of
// /proc and /sys, and /dev/urandom and /dev/random. Paths missing on a
// machine are skipped.
func DefaultRead() []string { return append([]string(nil), defaultRead...) }

// DefaultDevices returns the devices every confined plugin may read and
// write: /dev/null, /dev/zero and /dev/full.
func DefaultDevices() []string { return append([]string(nil), defaultDevices...) }
