package proxy

import "github.com/ferry-serving/ferry/internal/gateway/gatewaytest"

// The objects the tests build, shared with the other gateway packages' tests.
var (
	epoch           = gatewaytest.Epoch
	newIngress      = gatewaytest.NewIngress
	externalRule    = gatewaytest.ExternalRule
	localRule       = gatewaytest.LocalRule
	path            = gatewaytest.Path
	splitTo         = gatewaytest.SplitTo
	sliceFor        = gatewaytest.SliceFor
	serviceWithPort = gatewaytest.ServiceWithPort
	key             = gatewaytest.Key
	newTestScheme   = gatewaytest.NewScheme
	selfSigned      = gatewaytest.SelfSigned
	newSeededRoll   = gatewaytest.SeededRoll
)
