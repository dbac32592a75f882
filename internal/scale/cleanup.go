package scale

import (
	"context"
	"fmt"
	"io"
	"time"

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

// Cleanup deletes what the run created — its Services (the warm-up's too) and, if
// the run created it, the namespace — and waits until they and their children
// (Configurations, Revisions, Routes, Deployments, pods) are gone, or timeout.
func Cleanup(ctx context.Context, cfg *rest.Config, r *Result, timeout time.Duration, progress io.Writer) error {
	if progress == nil {
		progress = io.Discard
	}
	c, err := client.New(unthrottled(cfg), client.Options{Scheme: Scheme()})
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
	start := time.Now()
	if r.NamespaceCreated {
		fmt.Fprintf(progress, "Deleting namespace %s ...\n", r.Namespace)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.Namespace}}
		if err := c.Delete(ctx, ns); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting namespace %s: %w", r.Namespace, err)
		}
		err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
			err := c.Get(ctx, client.ObjectKeyFromObject(ns), ns)
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
		if err != nil {
			return fmt.Errorf("namespace %s was not gone after %s: %w", r.Namespace, fmtDur(time.Since(start)), err)
		}
		fmt.Fprintf(progress, "Namespace %s is gone (%s).\n", r.Namespace, fmtDur(time.Since(start)))
		return nil
	}
	fmt.Fprintf(progress, "Deleting the run's Services in %s ...\n", r.Namespace)
	if err := c.DeleteAllOf(ctx, &v1.Service{}, client.InNamespace(r.Namespace), client.MatchingLabelsSelector{Selector: sel},
		client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		return fmt.Errorf("deleting the run's Services: %w", err)
	}
	lists := []client.ObjectList{&v1.ServiceList{}, &v1.ConfigurationList{}, &v1.RouteList{}, &v1.RevisionList{}, &appsv1.DeploymentList{}, &corev1.PodList{}}
	var left string
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		for _, l := range lists {
			if err := c.List(ctx, l, client.InNamespace(r.Namespace), client.MatchingLabelsSelector{Selector: sel}, client.Limit(1)); err != nil {
				return false, err
			}
			if meta.LenList(l) > 0 {
				left = fmt.Sprintf("%T", l)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the run's objects were not gone after %s (still some %s): %w", fmtDur(time.Since(start)), left, err)
	}
	fmt.Fprintf(progress, "The run's objects are gone (%s).\n", fmtDur(time.Since(start)))
	return nil
}
