package soak

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/internal/config"
)

// Event is one thing the soak did: a change or a fault, with what came of it.
type Event struct {
	At   time.Time     `json:"at"`
	Kind string        `json:"kind"` // change, fault
	What string        `json:"what"`
	Took time.Duration `json:"took_ns"`
	Err  string        `json:"error,omitempty"`
}

// changes are a cluster's life, one per cycle, in turn.
func (r *run) changes() []func(context.Context) (string, error) {
	cs := []func(context.Context) (string, error){
		func(ctx context.Context) (string, error) { return r.updateTemplate(ctx, plain) },
		r.flipSplit,
		func(ctx context.Context) (string, error) { return r.updateTemplate(ctx, tagged) },
		func(ctx context.Context) (string, error) { return r.updateTemplate(ctx, rollout) },
		r.toggleDomain,
		r.churnOnce,
	}
	if r.o.ChangeAutoscaler {
		cs = append(cs, r.toggleStableWindow)
	}
	return cs
}

// updateTemplate makes a Service's next generation.
func (r *run) updateTemplate(ctx context.Context, name string) (string, error) {
	r.generation[name]++
	g := r.generation[name]
	return fmt.Sprintf("template of %s updated (generation %d)", name, g), r.updateService(ctx, name, func(s *v1.Service) {
		r.o.update(s, g, false)
	})
}

func (r *run) updateService(ctx context.Context, name string, f func(*v1.Service)) error {
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		s := &v1.Service{}
		if err := r.c.Get(ctx, client.ObjectKey{Namespace: r.o.Namespace, Name: name}, s); err != nil {
			return err
		}
		f(s)
		return r.c.Update(ctx, s)
	})
	if err == nil {
		for _, kind := range []string{"Service/", "Configuration/", "Route/"} {
			r.readiness.changed(time.Now(), kind+name)
		}
	}
	return err
}

// flipSplit moves the whole split Service's traffic to its other Revision.
func (r *run) flipSplit(ctx context.Context) (string, error) {
	r.splitToA = !r.splitToA
	percent, to := int64(0), splitB
	if r.splitToA {
		percent, to = 100, splitA
	}
	return "split flipped: 100 % to " + to, r.updateService(ctx, split, func(s *v1.Service) { s.Spec.Traffic = splitTraffic(percent) })
}

// churnOnce creates a Service and deletes the one the previous churn created.
func (r *run) churnOnce(ctx context.Context) (string, error) {
	r.churn++
	what := "created " + churnName(r.churn)
	if err := r.c.Create(ctx, r.o.service(churnName(r.churn))); err != nil {
		return what, err
	}
	if r.churn > 1 {
		old := churnName(r.churn - 1)
		what += ", deleted " + old
		err := r.c.Delete(ctx, r.o.service(old))
		if err != nil && !apierrors.IsNotFound(err) {
			return what, err
		}
	}
	return what, nil
}

// toggleDomain gives the run's Routes a domain of their own in config-domain (selected
// by the run's label, so no other Route moves), or takes it away again.
func (r *run) toggleDomain(ctx context.Context) (string, error) {
	r.ownDomain = !r.ownDomain
	key := r.domainKey()
	if r.ownDomain {
		return "config-domain: the run's Routes moved to " + key, r.editConfigMap(ctx, config.DomainConfigName, func(data map[string]string) {
			data[key] = fmt.Sprintf("selector:\n  %s: %s\n", RunLabel, r.o.RunID)
		})
	}
	return "config-domain: " + key + " removed, the run's Routes back on the default domain", r.editConfigMap(ctx, config.DomainConfigName, func(data map[string]string) {
		delete(data, key)
	})
}

func (r *run) domainKey() string { return "soak-" + r.o.RunID + ".example.org" }

// toggleStableWindow changes config-autoscaler's stable-window, which every Revision
// without a window of its own follows.
func (r *run) toggleStableWindow(ctx context.Context) (string, error) {
	r.shortWindow = !r.shortWindow
	if r.shortWindow {
		return "config-autoscaler: stable-window 30s", r.editConfigMap(ctx, config.AutoscalerConfigName, func(data map[string]string) {
			data["stable-window"] = "30s"
		})
	}
	return "config-autoscaler: stable-window back to what it was", r.restoreKey(ctx, config.AutoscalerConfigName, "stable-window")
}

// editConfigMap changes a ConfigMap of the system namespace, remembering each key's
// value before the run's first change so that restore can put it back. A missing
// ConfigMap is created.
func (r *run) editConfigMap(ctx context.Context, name string, f func(map[string]string)) error {
	key := client.ObjectKey{Namespace: r.o.SystemNamespace, Name: name}
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cm := &corev1.ConfigMap{}
		err := r.c.Get(ctx, key, cm)
		if apierrors.IsNotFound(err) {
			cm.Namespace, cm.Name = key.Namespace, key.Name
			cm.Data = map[string]string{}
			f(cm.Data)
			return r.c.Create(ctx, cm)
		}
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		r.remember(name, cm.Data)
		f(cm.Data)
		return r.c.Update(ctx, cm)
	})
	if err == nil {
		r.readiness.struck(time.Now())
	}
	return err
}

// remember keeps a ConfigMap's data as the run first found it.
func (r *run) remember(name string, data map[string]string) {
	if _, ok := r.original[name]; ok {
		return
	}
	orig := map[string]string{}
	for k, v := range data {
		orig[k] = v
	}
	r.original[name] = orig
}

// restoreKey puts one key of a ConfigMap back as the run found it.
func (r *run) restoreKey(ctx context.Context, name, key string) error {
	return r.editConfigMap(ctx, name, func(data map[string]string) {
		if v, ok := r.original[name][key]; ok {
			data[key] = v
		} else {
			delete(data, key)
		}
	})
}

// restoreConfig undoes the run's configuration changes, at the end.
func (r *run) restoreConfig(ctx context.Context) error {
	var errs []error
	if r.ownDomain {
		errs = append(errs, r.editConfigMap(ctx, config.DomainConfigName, func(data map[string]string) { delete(data, r.domainKey()) }))
		r.ownDomain = false
	}
	if r.shortWindow {
		errs = append(errs, r.restoreKey(ctx, config.AutoscalerConfigName, "stable-window"))
		r.shortWindow = false
	}
	return errors.Join(errs...)
}

// fault strikes one fault and returns what it did.
func (r *run) fault(ctx context.Context, f Fault) (string, error) {
	if r.o.Breaker == nil && f != FaultProgram {
		return "", ErrUnsupported
	}
	r.readiness.struck(time.Now())
	defer r.readiness.struck(time.Now())
	switch f {
	case FaultController:
		return r.o.Breaker.KillController(ctx)
	case FaultGateway:
		return r.o.Breaker.RestartGateway(ctx)
	case FaultAPIServer:
		return r.o.Breaker.SlowAPIServer(ctx, min(30*time.Second, r.o.Cycle/2))
	case FaultProgram:
		return r.crashProgram(ctx)
	}
	return "", fmt.Errorf("unknown fault %q", f)
}

// crashProgram rolls crashy out to a program that crashes at start, waits for the
// Service to say so (Ready False, with the reason), and rolls it back. Meanwhile the
// load must still be answered by the Revision before, as Knative keeps traffic on the
// latest ready Revision.
func (r *run) crashProgram(ctx context.Context) (string, error) {
	if !r.o.Programs {
		return "", fmt.Errorf("%w: pods are simulated, no program runs to crash", ErrUnsupported)
	}
	w := crashWindow{from: time.Now()}
	r.generation[crashy]++
	if err := r.updateService(ctx, crashy, func(s *v1.Service) { r.o.update(s, r.generation[crashy], true) }); err != nil {
		return "", err
	}
	what := "crashy rolled out to a program that crashes at start"
	deadline := time.Now().Add(r.o.ReadyBound)
	for {
		if reason, failed := r.failedNow(ctx, crashy); failed {
			what += fmt.Sprintf("; the Service said so %s later (%s)", time.Since(w.from).Round(100*time.Millisecond), reason)
			break
		}
		if time.Now().After(deadline) {
			r.crashUnseen++
			what += fmt.Sprintf("; the Service did NOT say so within %s", r.o.ReadyBound)
			break
		}
		select {
		case <-ctx.Done():
			return what, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	r.generation[crashy]++
	err := r.updateService(ctx, crashy, func(s *v1.Service) { r.o.update(s, r.generation[crashy], false) })
	w.to = time.Now()
	r.mu.Lock()
	r.crashes = append(r.crashes, w)
	r.mu.Unlock()
	return what + "; rolled back to a good program", err
}

// crashWindow is when crashy ran a crashing program: its Service and Configuration
// are expected not Ready then, and judged again from the rollback on.
type crashWindow struct{ from, to time.Time }

// notJudged says whether a not-Ready span is not the soak's to judge: it ended while
// the fleet was being created (the first pod of a program may wait for its build), or
// it is crashy's expected failure.
func (r *run) notJudged(object string, from, to time.Time) bool {
	return to.Before(r.started) || r.expectedFailure(object, from, to)
}

// expectedFailure says whether a not-Ready span is crashy's expected one.
func (r *run) expectedFailure(object string, from, to time.Time) bool {
	if object != "Service/"+crashy && object != "Configuration/"+crashy {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.crashes {
		if !from.Before(w.from) && !from.After(w.to) && !to.After(w.to.Add(r.o.ReadyBound)) {
			return true
		}
	}
	return false
}

// failedNow says whether a Service reports its current generation as failed (Ready
// False), and why.
func (r *run) failedNow(ctx context.Context, name string) (string, bool) {
	s := &v1.Service{}
	if err := r.c.Get(ctx, client.ObjectKey{Namespace: r.o.Namespace, Name: name}, s); err != nil {
		return "", false
	}
	c := s.Status.GetCondition(duck.ConditionReady)
	if s.Status.ObservedGeneration != s.Generation || !c.IsFalse() {
		return "", false
	}
	return readyReason(&s.Status.Status), true
}
