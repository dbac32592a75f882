package routingstate

import (
	"testing"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

func TestWant(t *testing.T) {
	for _, tt := range []struct {
		name           string
		have           v1.RoutingState
		routed, latest bool
		want           v1.RoutingState // "" with ok false: leave it
	}{
		{name: "new, not yet routed", have: v1.RoutingStatePending, latest: true},
		{name: "new, routed", have: v1.RoutingStatePending, routed: true, latest: true, want: v1.RoutingStateActive},
		{name: "made by an older Ferry, routed", have: v1.RoutingStateUnset, routed: true, want: v1.RoutingStateActive},
		{name: "made by an older Ferry, latest, not routed", have: v1.RoutingStateUnset, latest: true},
		{name: "routed, active already", have: v1.RoutingStateActive, routed: true},
		{name: "routed, labelled by Knative", have: v1.RoutingStateActive, routed: true, latest: true},
		{name: "left its Routes", have: v1.RoutingStateUnset, want: v1.RoutingStateReserve},
		{name: "left its Routes, labelled active by Knative", have: v1.RoutingStateActive, want: v1.RoutingStateReserve},
		{name: "never routed, superseded", have: v1.RoutingStatePending, want: v1.RoutingStateReserve},
		{name: "reserve already", have: v1.RoutingStateReserve},
		{name: "reserve, routed again", have: v1.RoutingStateReserve, routed: true, want: v1.RoutingStateActive},
		{name: "reserve, latest again but not routed", have: v1.RoutingStateReserve, latest: true},
		{name: "latest, routed elsewhere no more", have: v1.RoutingStateActive, latest: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := want(tt.have, tt.routed, tt.latest)
			if ok != (tt.want != "") || (ok && got != tt.want) {
				t.Errorf("want(%q, routed %v, latest %v) = %q, %v; want %q", tt.have, tt.routed, tt.latest, got, ok, tt.want)
			}
		})
	}
}
