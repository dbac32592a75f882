package routing

import (
	"strconv"
	"testing"

	"github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
)

// BenchmarkProgramAt5000 is the cost of programming one changed ingress while 5000
// others, with three hosts each, are live: the KIngress reconciler pays it per event.
func BenchmarkProgramAt5000(b *testing.B) {
	services := backends.NewRegistry()
	p := NewProgrammer(services)
	manyIngress := func(i int, generation int64) *v1alpha1.Ingress {
		name := "app-" + strconv.Itoa(i)
		ing := gatewaytest.NewIngress(name, i, gatewaytest.ExternalRule([]string{name + ".ns.example.com"},
			gatewaytest.Path("", gatewaytest.SplitTo(name+"-00001", 90), gatewaytest.SplitTo(name+"-00002", 10))),
			gatewaytest.LocalRule([]string{name + ".ns.svc.cluster.local", name + ".ns.svc"}, gatewaytest.Path("", gatewaytest.SplitTo(name+"-00001", 100))))
		ing.Generation = generation
		return ing
	}
	for i := range 5000 {
		p.program(compileIngress(manyIngress(i, 1), services))
	}
	b.ResetTimer()
	for i := range b.N {
		p.program(compileIngress(manyIngress(i%5000, int64(i+2)), services))
	}
}
