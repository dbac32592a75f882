package gateway

import (
	"strings"
	"testing"
	"time"
)

func TestLeaseDurationMustBeWholeSeconds(t *testing.T) {
	for _, d := range []time.Duration{1500 * time.Millisecond, 500 * time.Millisecond} {
		_, err := New(Options{LeaseNamespace: "gw", LeaseDuration: d}).newReplicaSet(nil, nil)
		if err == nil || !strings.Contains(err.Error(), "--lease-duration") {
			t.Errorf("LeaseDuration %v: error %v, want one naming --lease-duration", d, err)
		}
	}
}
