package scale

import "testing"

func TestRouted(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   bool
	}{
		{200, "Hello World!", true},
		{200, "Hello from revision x-00001 (pod 10.244.0.5 is simulated by kwok; no process serves it)\n", true},
		{503, "ferry: routed to revision x-00001 (pod 10.244.0.5 is simulated by kwok; no process serves it)\n", false},
		{503, "ferry: routed to revision x-00001, which has no ready endpoints\n", false},
		{503, "upstream unavailable", false},
		{404, `ferry: no route for host "x.ns.example.com"`, false},
	} {
		if got := Routed(tc.status, tc.body); got != tc.want {
			t.Errorf("Routed(%d, %q) = %v", tc.status, tc.body, got)
		}
	}
}
