package proxy

import "testing"

func TestForwarded(t *testing.T) {
	for _, tc := range []struct{ ip, host, proto, want string }{
		{"10.0.0.1", "hello.default.example.com", "http", "for=10.0.0.1;host=hello.default.example.com;proto=http"},
		{"::1", "h.example.com:8443", "https", `for="[::1]";host=h.example.com:8443;proto=https`},
		{"", "h", "http", "host=h;proto=http"},
	} {
		if got := string(appendForwarded(nil, tc.ip, tc.host, tc.proto)); got != tc.want {
			t.Errorf("appendForwarded(%q, %q, %q) = %q, want %q", tc.ip, tc.host, tc.proto, got, tc.want)
		}
	}
}
