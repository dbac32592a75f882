package convergence

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/reconciler"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/index"
	"github.com/ferry-serving/ferry/internal/watches"
)

// process is one `ferry controller` replica while it leads, or one gateway replica:
// its informers, its controllers' queues, and Ferry's real reconcilers built as the
// manager builds them. A crash loses all of it; a restart builds it again from the
// store.
type process struct {
	name  string
	sim   *Sim
	alive bool
	// startAt is the store log index the informers start from; started is set once
	// the process is built: an informer started later lists the store as it is then.
	startAt     int
	started     bool
	informers   map[string]*informer
	controllers []*controller
	set         *reconciler.Set
	// requeue is a gateway's: the ingresses its programmer hands back.
	requeue chan event.GenericEvent
	// gateway is set in a gateway replica.
	gateway *gateway
	// config is the configuration as this process's ConfigMap informer last saw it;
	// onConfig are its subscribers (config.Store.OnChange).
	config   *config.Config
	onConfig []func(old, new *config.Config)
}

type controller struct {
	name  string
	proc  *process
	queue *queue
	do    reconcile.Reconciler
}

// start builds a controller process: Ferry's reconcilers, their informers with caches
// as of the store's log index asOf (behind the store when asOf < len(log): a stale
// view), and the initial list delivered to every watch.
func (s *Sim) start(name string, asOf int) *process {
	p := s.newProcess(name, asOf)
	route := &controllerRef{}
	p.set = reconciler.Build(reconciler.Deps{
		Client: cacheClient{p: p}, APIReader: apiReader{sim: s},
		Recorder: func(string) events.EventRecorder { return s.recorder },
		Owners:   watches.Owners{Scheme: s.scheme, Mapper: s.mapper},
		Clock:    s.clock, Serial: true, Without: s.weaken.without(), NoRefusalRetry: s.weaken.RefusalRetry,
	}, s.options(p), route.add, func(key types.NamespacedName) { s.decided(p, key) })
	if s.weaken.Tracker {
		p.set.Tracker.ReadBeforeTrack()
	}
	if err := index.Register(context.Background(), p); err != nil {
		panic(err)
	}
	for _, c := range p.set.All() {
		ctl := p.run(c)
		if c.Name == p.set.Route.Name {
			route.c = ctl
		}
	}
	p.started = true
	return p
}

func (s *Sim) newProcess(name string, asOf int) *process {
	return &process{name: name, sim: s, alive: true, startAt: asOf, informers: map[string]*informer{}, config: s.config}
}

// run adds c to the process: a queue, a listener on the informer of each kind it
// watches, which lists what the informer holds, and its other sources started on the
// queue (none of Build's starts a goroutine: they enqueue when the reconcilers or the
// configuration tell them to).
func (p *process) run(c watches.Controller) *controller {
	ctl := &controller{name: c.Name, proc: p, queue: newQueue(p.sim, p), do: c.Reconciler}
	p.controllers = append(p.controllers, ctl)
	for _, src := range c.Sources {
		if err := src.Start(context.Background(), ctl.queue); err != nil {
			panic(err)
		}
	}
	for _, w := range c.Watches {
		inf := p.informer(kindOf(p.sim.scheme, w.Object))
		l := &listener{watch: w, control: ctl}
		inf.listeners = append(inf.listeners, l)
		for _, key := range sortedKeys(inf.objs) {
			l.pending = append(l.pending, notification{new: inf.objs[key], initial: true})
		}
	}
	return ctl
}

// controllerRef lets the tracker, built before the controllers, enqueue into one.
type controllerRef struct{ c *controller }

func (r *controllerRef) add(key types.NamespacedName) {
	if r.c != nil && r.c.proc.alive {
		r.c.queue.Add(reconcile.Request{NamespacedName: key})
	}
}

// informer returns the process's informer of kind, starting it (as of the process's
// start) if it is new, as controller-runtime starts one on first use.
func (p *process) informer(kind string) *informer {
	if inf, ok := p.informers[kind]; ok {
		return inf
	}
	inf := &informer{kind: kind, objs: map[types.NamespacedName]client.Object{}, indexes: map[string]client.IndexerFunc{},
		read: map[types.NamespacedName]readCopy{}}
	at := p.startAt
	if p.started {
		// Started after the process began: it lists the store as it is now.
		at = len(p.sim.store.log)
	}
	for _, c := range p.sim.store.log[:at] {
		if c.ref.kind != kind {
			continue
		}
		if c.deleted {
			delete(inf.objs, c.ref.key)
		} else {
			inf.objs[c.ref.key] = c.obj.DeepCopyObject().(client.Object)
		}
	}
	inf.cursor = at
	p.informers[kind] = inf
	return inf
}

// IndexField registers a field index on the process's cache (client.FieldIndexer).
func (p *process) IndexField(_ context.Context, obj client.Object, field string, fn client.IndexerFunc) error {
	p.informer(kindOf(p.sim.scheme, obj)).indexes[field] = fn
	return nil
}

func (p *process) controller(name string) *controller {
	for _, c := range p.controllers {
		if c.name == name {
			return c
		}
	}
	panic(fmt.Sprintf("no controller %q", name))
}

// crashed is what a crashing process panics with, to unwind the reconcile it is in.
type crashed struct{ proc string }

func (c crashed) Error() string { return c.proc + " crashed" }

// configAction is p's ConfigMap informer catching up with the configuration the user
// wrote last: its store publishes it and tells its subscribers, as config.Store does.
func (s *Sim) configAction(p *process) (action, bool) {
	if p.config == s.config {
		return action{}, false
	}
	return action{"config store of " + p.name + " catches up", func() {
		old := p.config
		p.config = s.config
		s.logf("[%s] sees the new configuration", p.name)
		if s.weaken.ConfigChanges {
			return
		}
		for _, f := range p.onConfig {
			f(old, p.config)
		}
	}}, true
}
