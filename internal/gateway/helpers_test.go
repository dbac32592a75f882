package gateway

import (
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
)

// The objects the tests build, shared with the other gateway packages' tests.
var (
	epoch           = gatewaytest.Epoch
	newIngress      = gatewaytest.NewIngress
	simpleIngress   = gatewaytest.SimpleIngress
	externalRule    = gatewaytest.ExternalRule
	localRule       = gatewaytest.LocalRule
	path            = gatewaytest.Path
	splitTo         = gatewaytest.SplitTo
	serviceWithPort = gatewaytest.ServiceWithPort
	sliceFor        = gatewaytest.SliceFor
	notSimulated    = gatewaytest.NotSimulated
	key             = gatewaytest.Key
	newSeededRoll   = gatewaytest.SeededRoll
	newTestScheme   = gatewaytest.NewScheme
	selfSigned      = gatewaytest.SelfSigned
)
