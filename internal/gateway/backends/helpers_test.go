package backends

import (
	"github.com/ferry-serving/ferry/internal/autoscaler/stats"
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
)

// The objects the tests build, shared with the other gateway packages' tests.
var (
	simpleIngress   = gatewaytest.SimpleIngress
	serviceWithPort = gatewaytest.ServiceWithPort
	sliceFor        = gatewaytest.SliceFor
	notSimulated    = gatewaytest.NotSimulated
	key             = gatewaytest.Key
	newTestScheme   = gatewaytest.NewScheme
)

// discardSink drops the reports.
type discardSink struct{}

func (discardSink) Report(stats.Report) {}
func (discardSink) Poke(string, string) {}
