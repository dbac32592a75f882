package routing

import "testing"

func TestCanonicalHost(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{in: "hello.default.example.com", want: "hello.default.example.com", ok: true},
		{in: "Hello.Default.Example.COM", want: "hello.default.example.com", ok: true},
		{in: "hello.example.com:8080", want: "hello.example.com", ok: true},
		{in: "hello.example.com.", want: "hello.example.com", ok: true},
		{in: "hello.example.com.:80", want: "hello.example.com", ok: true},
		{in: "hello.example.com:", want: "hello.example.com", ok: true},
		{in: "10.0.0.1:80", want: "10.0.0.1", ok: true},
		{in: "[::1]:8080", want: "[::1]", ok: true},
		{in: "[FE80::1]", want: "[fe80::1]", ok: true},
		{in: "", ok: false},
		{in: ":80", ok: false},
		{in: ".", ok: false},
		{in: "host:port", ok: false},
		{in: "host:123456", ok: false},
		{in: "a b", ok: false},
		{in: "evil.com/path", ok: false},
		{in: "user@host", ok: false},
		{in: "[::1", ok: false},
		{in: "[]", ok: false},
		{in: "[::1]x", ok: false},
		{in: "[zz::1]", ok: false},
	} {
		got, ok := CanonicalHost(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("canonicalHost(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestCanonicalHostDoesNotAllocateForLowercase(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() { CanonicalHost("hello.default.example.com:8080") })
	if allocs != 0 {
		t.Errorf("canonicalHost allocated %v times", allocs)
	}
}
