package routingstate

import v1 "github.com/ferry-serving/ferry/api/serving/v1"

// want is the label a Revision should carry, given whether a Route sends it traffic
// and whether it is its Configuration's latest created or ready Revision; ok is false
// when the label it has is right.
func want(have v1.RoutingState, routed, latest bool) (v1.RoutingState, bool) {
	switch {
	case routed && have != v1.RoutingStateActive:
		return v1.RoutingStateActive, true
	case !routed && !latest && have != v1.RoutingStateReserve:
		return v1.RoutingStateReserve, true
	}
	return have, false
}
