package routing

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ferry-serving/ferry/api/networking/v1alpha1"

	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"k8s.io/apimachinery/pkg/types"
)

// Programmer owns the compiled ingresses and decides which one serves each host. Each
// change is applied incrementally: only the hosts of the changed ingress are
// re-decided, and only their shards are copied into the next table.
type Programmer struct {
	services *backends.Registry
	// current is what the listeners read.
	current atomic.Pointer[Table]
	// warm is set once every KIngress the replica found at start is programmed (Warm).
	warm atomic.Bool

	mu        sync.Mutex
	ingresses map[types.NamespacedName]*compiledIngress
	// claims lists, per host, the valid ingresses that name it, oldest first: the
	// first one serves the host.
	claims map[string][]*compiledIngress
}

// hostConflict is a host that an ingress names but another, older ingress serves.
type hostConflict struct {
	host  string
	owner types.NamespacedName
}

func NewProgrammer(services *backends.Registry) *Programmer {
	p := &Programmer{
		services:  services,
		ingresses: map[types.NamespacedName]*compiledIngress{},
		claims:    map[string][]*compiledIngress{},
	}
	p.current.Store(&Table{})
	return p
}

func (p *Programmer) Table() *Table { return p.current.Load() }

// Apply compiles ing and publishes the table that serves it, as the KIngress
// reconciler does, without writing a status; an ingress that cannot be programmed is
// an error, a host that an older ingress holds is not.
func (p *Programmer) Apply(ing *v1alpha1.Ingress) error {
	ci := compileIngress(ing, p.services)
	if ci.invalid != nil {
		return ci.invalid
	}
	p.program(ci)
	return nil
}

// Serves returns the generation of key this replica's table serves (false: none),
// as it records in its Lease.
func (p *Programmer) Serves(key types.NamespacedName) (generation int64, ok bool) {
	if ci := p.compiled(key); ci != nil {
		return ci.generation, true
	}
	return 0, false
}

// compiled returns the entry programmed for key, or nil.
func (p *Programmer) compiled(key types.NamespacedName) *compiledIngress {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ingresses[key]
}

// program makes ci the entry for its key and publishes the resulting table before it
// returns, so a status written afterwards never runs ahead of the data plane. It
// returns the hosts ci lost to older ingresses, and the other ingresses whose hosts
// changed hands, which need their status rewritten.
func (p *Programmer) program(ci *compiledIngress) (conflicts []hostConflict, affected []types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.ingresses[ci.key]
	p.ingresses[ci.key] = ci
	affected = p.replaceLocked(old, ci)
	for host := range ci.hosts {
		if owner := p.claims[host][0]; owner != ci {
			conflicts = append(conflicts, hostConflict{host: host, owner: owner.key})
		}
	}
	slices.SortFunc(conflicts, func(a, b hostConflict) int { return cmp.Compare(a.host, b.host) })
	return conflicts, affected
}

// forget removes the entry for key, if any, and publishes the resulting table. It
// returns the ingresses that now serve hosts key had held.
func (p *Programmer) forget(key types.NamespacedName) (affected []types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.ingresses[key]
	if old == nil {
		return nil
	}
	delete(p.ingresses, key)
	return p.replaceLocked(old, nil)
}

// replaceLocked swaps old for next (either may be nil) in the claims, publishes the
// table if any host changed hands, and gives back old's service references.
func (p *Programmer) replaceLocked(old, next *compiledIngress) (affected []types.NamespacedName) {
	if old == next {
		return nil
	}
	touched := map[string]*compiledIngress{} // host → owner before the change
	if old != nil {
		for host := range old.hosts {
			touched[host] = p.owner(host)
			p.claims[host] = slices.DeleteFunc(p.claims[host], func(c *compiledIngress) bool { return c == old })
		}
	}
	if next != nil {
		for host := range next.hosts {
			if _, seen := touched[host]; !seen {
				touched[host] = p.owner(host)
			}
			p.claims[host] = insertByAge(p.claims[host], next)
		}
	}

	current := p.current.Load()
	changes := map[string]*VirtualHost{}
	affectedSet := map[types.NamespacedName]bool{}
	for host, before := range touched {
		after := p.owner(host)
		var serves *VirtualHost
		if after == nil {
			delete(p.claims, host)
		} else {
			serves = after.hosts[host]
		}
		if current.Lookup(host) != serves {
			changes[host] = serves
		}
		if before == after {
			continue
		}
		// The host changed hands: its old owner and every claimant report on it in
		// their status, except the ingress being programmed, whose caller reports.
		for _, c := range slices.Concat(p.claims[host], []*compiledIngress{before}) {
			if c != nil && c != old && c != next {
				affectedSet[c.key] = true
			}
		}
	}
	if len(changes) > 0 {
		p.current.Store(p.current.Load().with(changes))
	}
	if old != nil {
		for _, s := range old.services {
			p.services.Release(s)
		}
	}
	for key := range affectedSet {
		affected = append(affected, key)
	}
	// In a fixed order, so that a replay (the convergence simulation's seed) requeues
	// them as it did before.
	slices.SortFunc(affected, func(a, b types.NamespacedName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return affected
}

func (p *Programmer) owner(host string) *compiledIngress {
	if c := p.claims[host]; len(c) > 0 {
		return c[0]
	}
	return nil
}

// insertByAge keeps claims ordered oldest first; equal timestamps (they have one
// second resolution) fall back to namespace/name so that every replica agrees.
func insertByAge(claims []*compiledIngress, ci *compiledIngress) []*compiledIngress {
	i, _ := slices.BinarySearchFunc(claims, ci, olderFirst)
	return slices.Insert(claims, i, ci)
}

func olderFirst(a, b *compiledIngress) int {
	if c := a.created.Compare(b.created); c != 0 {
		return c
	}
	if c := cmp.Compare(a.key.Namespace, b.key.Namespace); c != 0 {
		return c
	}
	return cmp.Compare(a.key.Name, b.key.Name)
}
