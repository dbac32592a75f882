package gateway

import (
	"math/rand/v2"

	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
)

// newSeededRoll is a deterministic replacement for rand.IntN.
func newSeededRoll(seed uint64) func(int) int {
	return rand.New(rand.NewPCG(seed, seed)).IntN
}

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
	newTestScheme   = gatewaytest.NewScheme
)
