// Package sandbox confines one plugin process tree: resource limits
// (cgroup v2 when the host can create child cgroups, else rlimits), a
// filesystem and network sandbox (Landlock), and a launcher that keeps
// the tree together so no descendant outlives the plugin or the host.
package sandbox

// Spec is what confines one plugin, decided by the host from its flags and
// the plugin's policy declaration (NAME.policy.json). The zero Spec
// confines nothing. It travels as JSON from the host to the launcher
// process (EnvSpec).
type Spec struct {
	// MemoryBytes caps the memory of the plugin's process tree, in bytes
	// (cgroup memory.max; without cgroups RLIMIT_AS of each process).
	// 0: no limit.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// CPUPercent caps the CPU time of the tree per wall-clock second, in
	// percent of one core (cgroup cpu.max; 200 is two cores). 0: no cap.
	CPUPercent int `json:"cpu_percent,omitempty"`
	// CPUSeconds caps the total CPU time of each process, in seconds
	// (RLIMIT_CPU; the kernel sends SIGXCPU, then SIGKILL). 0: no limit.
	CPUSeconds int64 `json:"cpu_seconds,omitempty"`
	// Processes caps the number of processes (and threads) of the tree
	// (cgroup pids.max; without cgroups RLIMIT_NPROC). 0: no limit.
	Processes int `json:"processes,omitempty"`

	// Confine turns on the Landlock filesystem sandbox: the plugin may
	// read and execute only the system folders of DefaultRead plus Read,
	// and write only Write (and the host's socket folder).
	Confine bool `json:"confine,omitempty"`
	// Read are absolute paths the plugin may read (and execute).
	Read []string `json:"read,omitempty"`
	// Write are absolute paths the plugin may read and write.
	Write []string `json:"write,omitempty"`
	// DenyNetwork denies TCP bind and connect (Landlock ABI 4 or later),
	// except connecting to the ports of ConnectTCP.
	DenyNetwork bool `json:"deny_network,omitempty"`
	// ConnectTCP are TCP ports the plugin may still connect to when
	// DenyNetwork is set.
	ConnectTCP []uint16 `json:"connect_tcp,omitempty"`
	// Require makes a sandbox the kernel cannot apply in full a start
	// failure instead of a logged best effort (host flag
	// --require-sandbox).
	Require bool `json:"require,omitempty"`
}
