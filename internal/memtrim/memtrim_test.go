package memtrim

import (
	"strings"
	"testing"
)

// TestProgramMappings: of /proc/PID/maps, the read-only mappings of the
// program file are kept (a path with spaces whole), its writable data,
// other files and anonymous mappings are not, bad lines are skipped.
func TestProgramMappings(t *testing.T) {
	maps := strings.Join([]string{
		"00400000-00402000 r--p 00000000 fe:00 9986994                            /opt/my host/opentool-host",
		"00402000-01664000 r-xp 00002000 fe:00 9986994                            /opt/my host/opentool-host",
		"01664000-02ac1000 r--p 01264000 fe:00 9986994                            /opt/my host/opentool-host",
		"02ac2000-02bba000 rw-p 026c1000 fe:00 9986994                            /opt/my host/opentool-host",
		"02bba000-02c00000 rw-p 00000000 00:00 0",
		"7fa9a1ca3000-7fa9a1df9000 r-xp 00026000 fe:00 326269                     /usr/lib/x86_64-linux-gnu/libc.so.6",
		"7fa9a1df9000-7fa9a1df8000 r-xp 00026000 fe:00 326269                     /opt/my host/opentool-host",
		"zz-yy r-xp 0 fe:00 1 /opt/my host/opentool-host",
		"",
	}, "\n")
	got := programMappings(strings.NewReader(maps), "/opt/my host/opentool-host")
	want := []mapping{{0x400000, 0x402000, false, "/opt/my host/opentool-host"}, {0x402000, 0x1664000, false, "/opt/my host/opentool-host"}, {0x1664000, 0x2ac1000, false, "/opt/my host/opentool-host"}}
	if len(got) != len(want) {
		t.Fatalf("programMappings = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mapping %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
