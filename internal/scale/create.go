package scale

// Creating the run's Services: the load the run itself puts on the API server —
// bounded concurrency, retries of what an overloaded one answers — and the warnings
// each create got.

import (
	"context"
	"sync"
	"time"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// createAll creates the Services, at most Concurrency at once.
func (r *runner) createAll(ctx context.Context) {
	sem := make(chan struct{}, r.o.Concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range r.names {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			r.mu.Lock()
			for j := i; j < len(r.names); j++ {
				r.createErr[j] = "not created: the run was cancelled"
			}
			r.mu.Unlock()
			return
		}
		wg.Go(func() {
			defer func() { <-sem }()
			r.create(ctx, i)
		})
	}
}

func (r *runner) create(ctx context.Context, i int) {
	ctx = context.WithValue(ctx, sampleKey{}, i)
	svc := r.service(r.nsOf(i), r.names[i], r.o.RunID)
	r.mu.Lock()
	r.start[i] = time.Now()
	r.mu.Unlock()
	err := createWithRetry(ctx, r.c, svc)
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.createErr[i] = err.Error()
		return
	}
	r.createdAt[i] = now
}

// sampleKey marks a create request's context with its Service's index, so that the
// warning it is answered with is recorded with the Service.
type sampleKey struct{}

// HandleWarningHeaderWithContext records a create's warnings (rest.WarningHandlerWithContext).
func (r *runner) HandleWarningHeaderWithContext(ctx context.Context, _ int, _ string, text string) {
	if i, ok := ctx.Value(sampleKey{}).(int); ok {
		r.mu.Lock()
		r.createWarn[i] = append(r.createWarn[i], text)
		r.mu.Unlock()
	}
}

// createWithRetry retries what an overloaded API server answers (429, timeouts,
// 500s) a few times; AlreadyExists on a retry means the earlier attempt went
// through.
func createWithRetry(ctx context.Context, c client.Client, obj client.Object) error {
	delay := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := c.Create(ctx, obj)
		if err == nil || (attempt > 0 && apierrors.IsAlreadyExists(err)) {
			return nil
		}
		transient := apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
			apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
		if !transient || attempt >= 4 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay *= 2
	}
}

// service is the Service the run creates in ns: the image, and the run label on the
// Service and its template (so Revisions, Deployments and pods carry it too).
func (r *runner) service(ns, name, runLabel string) *v1.Service {
	l := map[string]string{RunLabel: runLabel}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l}}
	svc.Spec.Template.ObjectMeta.Labels = map[string]string{RunLabel: runLabel}
	svc.Spec.Template.Spec.Containers = []corev1.Container{{Image: r.o.Image}}
	return svc
}
