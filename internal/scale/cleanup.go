package scale

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ferry-serving/ferry/api/scheme"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Cleanup deletes what the run created — its Services (the warm-up's too) and the
// namespaces the run created — and waits until they and their children
// (Configurations, Revisions, Routes, Deployments, pods) are gone, or timeout. In a
// namespace the run created, the namespace is deleted; in the others, the run's
// Services.
func Cleanup(ctx context.Context, cfg *rest.Config, r *Result, timeout time.Duration, progress io.Writer) error {
	if progress == nil {
		progress = io.Discard
	}
	c, err := client.New(unthrottled(cfg), client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := labels.NewRequirement(RunLabel, selection.In, []string{r.RunID, r.RunID + "-warmup"})
	if err != nil {
		return err
	}
	sel := labels.NewSelector().Add(*req)
	created := r.createdNamespaces()
	var deleted, emptied []string // the namespaces deleted; those the run's Services are deleted in
	for _, ns := range r.AllNamespaces() {
		if created[ns] {
			deleted = append(deleted, ns)
		} else {
			emptied = append(emptied, ns)
		}
	}
	start := time.Now()
	if len(deleted) > 0 {
		fmt.Fprintf(progress, "Deleting %s ...\n", describeNamespaces(deleted))
		for _, ns := range deleted {
			if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting namespace %s: %w", ns, err)
			}
		}
	}
	if len(emptied) > 0 {
		fmt.Fprintf(progress, "Deleting the run's Services in %s ...\n", strings.Join(emptied, ", "))
		for _, ns := range emptied {
			if err := c.DeleteAllOf(ctx, &v1.Service{}, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel},
				client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
				return fmt.Errorf("deleting the run's Services in %s: %w", ns, err)
			}
		}
	}
	lists := []func() client.ObjectList{
		func() client.ObjectList { return &v1.ServiceList{} }, func() client.ObjectList { return &v1.ConfigurationList{} },
		func() client.ObjectList { return &v1.RouteList{} }, func() client.ObjectList { return &v1.RevisionList{} },
		func() client.ObjectList { return &appsv1.DeploymentList{} }, func() client.ObjectList { return &corev1.PodList{} },
	}
	// What is left to wait for: the namespaces not gone yet, the namespaces with some
	// of the run's objects left. Each is checked until it is done.
	nsLeft, objsLeft := slices.Clone(deleted), slices.Clone(emptied)
	var left string
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		for len(nsLeft) > 0 {
			ns := &corev1.Namespace{}
			err := c.Get(ctx, client.ObjectKey{Name: nsLeft[0]}, ns)
			if !apierrors.IsNotFound(err) {
				return false, err
			}
			nsLeft = nsLeft[1:]
		}
		for len(objsLeft) > 0 {
			for _, newList := range lists {
				l := newList()
				if err := c.List(ctx, l, client.InNamespace(objsLeft[0]), client.MatchingLabelsSelector{Selector: sel}, client.Limit(1)); err != nil {
					return false, err
				}
				if meta.LenList(l) > 0 {
					left = fmt.Sprintf("%T", l)
					if len(emptied) > 1 {
						left += " in " + objsLeft[0]
					}
					return false, nil
				}
			}
			objsLeft = objsLeft[1:]
		}
		return true, nil
	})
	switch {
	case err != nil && len(nsLeft) > 0:
		return fmt.Errorf("namespace %s was not gone after %s: %w", nsLeft[0], fmtDur(time.Since(start)), err)
	case err != nil:
		return fmt.Errorf("the run's objects were not gone after %s (still some %s): %w", fmtDur(time.Since(start)), left, err)
	}
	switch len(deleted) {
	case 0:
	case 1:
		fmt.Fprintf(progress, "Namespace %s is gone (%s).\n", deleted[0], fmtDur(time.Since(start)))
	default:
		fmt.Fprintf(progress, "The %d namespaces are gone (%s).\n", len(deleted), fmtDur(time.Since(start)))
	}
	if len(emptied) > 0 {
		fmt.Fprintf(progress, "The run's objects are gone (%s).\n", fmtDur(time.Since(start)))
	}
	return nil
}
