// Package tracker lets a reconciler depend on objects it does not own: it
// remembers which observer (a Route, say) read which objects (its
// Configurations), and enqueues the observer when one of them changes.
//
// # Register before reading
//
// A reconciler that reads an object from the informer cache and only then
// calls Track leaves a window: an update handled between the read and the
// Track finds no observer and is lost, and the observer acts on the stale
// copy until something else wakes it (knative/serving#2954). A
// TrackingReader (Tracker.Reader) closes the window by construction: every
// Get and List tracks first, then reads. That cannot lose an update because
// an informer writes each change to its store before it calls the event
// handlers. Take any update; its handler runs either
//
//   - before the registration, and then the store already held the update
//     when the registration was made, so the read, which comes later, sees
//     it; or
//   - after the registration, and then the handler finds the observer and
//     enqueues it.
//
// # The second guard
//
// Track, as Knative does since knative/pkg#245, also enqueues an observer as
// soon as it tracks a reference it was not tracking (or whose lease had
// expired). This covers callers of Track that read before tracking. It costs
// one extra reconcile when an observer's set of references grows; re-tracking
// a live reference costs nothing.
//
// # Forgetting
//
// TrackingReader.Commit replaces the observer's references with those read
// in the reconcile, so dependencies the observer no longer has stop waking
// it. OnDeletedObserver forgets a deleted observer entirely. Leases
// (DefaultLease unless New is given one) are a backstop for references that
// nothing forgets; expired ones are ignored at once and swept at most once a
// lease. Commit assumes no two reconciles of one observer overlap, which
// holds with controller-runtime and client-go workqueues: a key is handed to
// one worker at a time.
//
// # Wiring into a controller-runtime controller
//
//	src := tracker.NewQueueSource() // New's callback needs the queue
//	t := tracker.New(src.Enqueue, 0).SetScheme(mgr.GetScheme())
//	ctrl.NewControllerManagedBy(mgr).
//		For(&servingv1.Route{}).
//		Watches(&servingv1.Configuration{}, t.Handler()). // changes wake observers
//		WatchesRawSource(src).                           // Track's requeue reaches the queue
//		Complete(r)
//
// and in Reconcile:
//
//	rd := r.tracker.Reader(req.NamespacedName, r.client)
//	err := rd.Get(ctx, key, &cfg) // tracked, then read
//	...
//	rd.Commit()
//
// Handler adds observers to the queue the controller gives it, so events
// keep controller-runtime's priorities. New's callback carries only Track's
// immediate requeue, and OnChanged's for client-go informers
// (InformerHandler); QueueSource is how it reaches a controller's queue,
// which exists only once the controller starts.
//
// Objects from controller-runtime's cache carry no TypeMeta, so a tracker
// fed by it needs the scheme (SetScheme) to know their kind. References
// match on group and kind, not version.
package tracker
