package routing

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
	"k8s.io/apimachinery/pkg/types"
)

// servedBy returns the name of the first split's service for host on the external
// listener, or "" when the host is not served.
func servedBy(p *Programmer, host string) string {
	routes := p.Table().Lookup(host).Routes(true)
	if len(routes) == 0 {
		return ""
	}
	return routes[0].splits[0].Service.Key.Name
}

func TestProgramHostConflict(t *testing.T) {
	services := backends.NewRegistry()
	p := NewProgrammer(services)
	program := func(ing *v1alpha1.Ingress) ([]hostConflict, []types.NamespacedName) {
		return p.program(compileIngress(ing, services))
	}

	// The younger ingress is programmed first and takes the host...
	conflicts, affected := program(gatewaytest.SimpleIngress("young", 10, "young-svc", "shared.example.com", "young.example.com"))
	if len(conflicts) != 0 || len(affected) != 0 || servedBy(p, "shared.example.com") != "young-svc" {
		t.Fatalf("young: conflicts %v, affected %v", conflicts, affected)
	}
	// ...until the older one arrives: it wins, and the young one must report.
	conflicts, affected = program(gatewaytest.SimpleIngress("old", 20, "old-svc", "shared.example.com"))
	if len(conflicts) != 0 || !slices.Equal(affected, []types.NamespacedName{gatewaytest.Key("young")}) {
		t.Fatalf("old: conflicts %v, affected %v", conflicts, affected)
	}
	if got := servedBy(p, "shared.example.com"); got != "old-svc" {
		t.Errorf("shared host served by %q", got)
	}
	if got := servedBy(p, "young.example.com"); got != "young-svc" {
		t.Errorf("the young ingress's own host is served by %q", got)
	}
	// Reprogramming the young one (its requeue) reports the lost host.
	conflicts, affected = p.program(p.compiled(gatewaytest.Key("young")))
	if want := []hostConflict{{host: "shared.example.com", owner: gatewaytest.Key("old")}}; !slices.Equal(conflicts, want) || len(affected) != 0 {
		t.Errorf("young again: conflicts %v, affected %v", conflicts, affected)
	}

	// Deleting the old one hands the host back.
	affected = p.forget(gatewaytest.Key("old"))
	if !slices.Equal(affected, []types.NamespacedName{gatewaytest.Key("young")}) || servedBy(p, "shared.example.com") != "young-svc" {
		t.Errorf("after forget: affected %v, served by %q", affected, servedBy(p, "shared.example.com"))
	}
	if services.Lookup(gatewaytest.Key("old-svc")) != nil {
		t.Error("the forgotten ingress's service is still registered")
	}
}

func TestProgramEqualAgesOrderByName(t *testing.T) {
	services := backends.NewRegistry()
	p := NewProgrammer(services)
	p.program(compileIngress(gatewaytest.SimpleIngress("b", 0, "b-svc", "x.example.com"), services))
	p.program(compileIngress(gatewaytest.SimpleIngress("a", 0, "a-svc", "x.example.com"), services))
	if got := servedBy(p, "x.example.com"); got != "a-svc" {
		t.Errorf("served by %q, want a-svc", got)
	}
}

func TestProgramInvalidIngressReleasesItsHosts(t *testing.T) {
	services := backends.NewRegistry()
	p := NewProgrammer(services)
	p.program(compileIngress(gatewaytest.SimpleIngress("old", 20, "old-svc", "x.example.com"), services))
	p.program(compileIngress(gatewaytest.SimpleIngress("young", 10, "young-svc", "x.example.com"), services))

	broken := gatewaytest.NewIngress("old", 20, gatewaytest.ExternalRule([]string{"x.example.com"}, gatewaytest.Path("", gatewaytest.SplitTo("old-svc", 50), gatewaytest.SplitTo("other", 20))))
	broken.Generation = 2
	ci := compileIngress(broken, services)
	_, affected := p.program(ci)
	if ci.invalid == nil {
		t.Fatal("the broken spec compiled")
	}
	if !slices.Equal(affected, []types.NamespacedName{gatewaytest.Key("young")}) || servedBy(p, "x.example.com") != "young-svc" {
		t.Errorf("affected %v; host served by %q", affected, servedBy(p, "x.example.com"))
	}
}

func TestProgramPublishesOnlyChanges(t *testing.T) {
	services := backends.NewRegistry()
	p := NewProgrammer(services)
	ci := compileIngress(gatewaytest.SimpleIngress("a", 0, "a-svc", "a.example.com"), services)
	p.program(ci)
	before := p.Table()
	p.program(ci)
	if p.Table() != before {
		t.Error("reprogramming the same entry published a new table")
	}
	// A loser's change does not touch the table either.
	p.program(compileIngress(gatewaytest.SimpleIngress("b", -5, "b-svc", "a.example.com"), services))
	if p.Table() != before {
		t.Error("a losing claim published a new table")
	}
	// Programming another host shares every untouched shard, the one of a included.
	other := "c.example.com"
	for i := 0; shardOf(other) == shardOf("a.example.com"); i++ {
		other = fmt.Sprintf("c%d.example.com", i)
	}
	p.program(compileIngress(gatewaytest.SimpleIngress("c", 0, "c-svc", other), services))
	shardA := shardOf("a.example.com")
	if reflect.ValueOf(p.Table().shards[shardA]).Pointer() != reflect.ValueOf(before.shards[shardA]).Pointer() {
		t.Error("programming c copied the shard of a")
	}
}

func TestProgramRequeuesEveryClaimantWhenAHostChangesHands(t *testing.T) {
	services := backends.NewRegistry()
	p := NewProgrammer(services)
	p.program(compileIngress(gatewaytest.SimpleIngress("owner", 10, "owner-svc", "x.example.com"), services))
	p.program(compileIngress(gatewaytest.SimpleIngress("loser", 5, "loser-svc", "x.example.com"), services))
	// An older ingress takes the host: the old owner lost it, and the loser's status
	// must now name a different owner.
	_, affected := p.program(compileIngress(gatewaytest.SimpleIngress("oldest", 20, "oldest-svc", "x.example.com"), services))
	slices.SortFunc(affected, func(a, b types.NamespacedName) int { return strings.Compare(a.Name, b.Name) })
	if want := []types.NamespacedName{gatewaytest.Key("loser"), gatewaytest.Key("owner")}; !slices.Equal(affected, want) {
		t.Errorf("affected %v, want %v", affected, want)
	}
}
