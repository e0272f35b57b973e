package pluginsdk

import "testing"

// TestCertifiedLine: the plugin's certificate fills go-plugin's empty
// sixth field, its seventh (gRPC broker multiplexing) is kept, and a line
// that is no such handshake, or already carries a certificate, passes
// unchanged.
func TestCertifiedLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"1|3|unix|/s/plugin1|grpc|\n", "1|3|unix|/s/plugin1|grpc|CERT\n"},
		{"1|3|unix|/s/plugin1|grpc||true\n", "1|3|unix|/s/plugin1|grpc|CERT|true\n"},
		{"1|3|unix|/s/plugin1|grpc|", "1|3|unix|/s/plugin1|grpc|CERT"},
		{"1|3|unix|/s/plugin1|grpc|OTHER\n", "1|3|unix|/s/plugin1|grpc|OTHER\n"},
		{"1|3|unix|/s/plugin1|grpc\n", "1|3|unix|/s/plugin1|grpc\n"},
		{"hello\n", "hello\n"},
	} {
		if got := certifiedLine(c.in, "CERT"); got != c.want {
			t.Errorf("certifiedLine(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
