// Package configuration reconciles Knative Configurations: one Revision per generation
// of the template, and which of them is the latest created and the latest ready.
package configuration

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/reconciler/configuration/resources"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/base"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/index"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/observe"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/oldestfirst"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/refusal"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/terminating"
	"github.com/ferry-serving/ferry/internal/watches"
)

// Reconciler reconciles one Configuration per call.
type Reconciler struct {
	// Base.Config: config-defaults and config-features default the Revisions as
	// admission would.
	base.Base
	// APIReader reads from the API server itself, to settle an AlreadyExists that the
	// cache cannot explain yet.
	APIReader client.Reader
}

// Controller is what wakes the reconciler: its Configurations and their Revisions.
func (r *Reconciler) Controller(o watches.Owners) watches.Controller {
	ages := oldestfirst.New()
	return watches.Controller{
		Name: "configuration",
		Watches: []watches.Watch{
			// Its own status writes cannot change the outcome; anything else can, a
			// stale status another controller wrote included.
			{Object: &v1.Configuration{}, Handler: ages.Object(), Predicates: []predicate.Predicate{r.Status.Changes()}},
			// A Revision's replicas and the like do not change which is latest or ready.
			{Object: &v1.Revision{}, Handler: ages.Owner(o.Scheme, o.Mapper, &v1.Configuration{}), Predicates: []predicate.Predicate{
				predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
					o, n := e.ObjectOld.(*v1.Revision), e.ObjectNew.(*v1.Revision)
					return o.IsReady() != n.IsReady() || o.IsFailed() != n.IsFailed() ||
						!equality.Semantic.DeepEqual(o.Labels, n.Labels) || !equality.Semantic.DeepEqual(o.OwnerReferences, n.OwnerReferences) ||
						readyMessage(o) != readyMessage(n)
				}}}},
		},
		Reconciler: terminating.Ignore(r),
	}
}

// problem is why the Configuration cannot get its Revision, as it marks Ready;
// refused is set when the API server refused to create it.
type problem struct {
	mark    func(*v1.ConfigurationStatus)
	refused *refusal.Error
}

// Reconcile makes sure the current generation has its Revision and reports the latest
// created and latest ready ones.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// Observe.
	cfg := &v1.Configuration{}
	if ok, err := observe.Object(ctx, r.Client, req.NamespacedName, cfg, r.Status.Forget); !ok {
		return ctrl.Result{}, err
	}
	r.Read()

	// Desired and apply: the Revision of the current generation.
	latest, p, err := r.latestCreated(ctx, cfg)
	if err != nil {
		return ctrl.Result{}, err
	}

	// Status.
	status, _ := base.OpenStatus(&cfg.Status, cfg.Generation, v1.ConfigurationConditions)
	if p != nil {
		p.mark(status)
		res, err := r.Status.Write(ctx, cfg, &cfg.Status, status)
		if p.refused != nil {
			return refusal.Result(res, err, p.refused)
		}
		return res, err
	}
	status.LatestCreatedRevisionName = latest.Name

	ready, err := r.latestReady(ctx, cfg, status.LatestReadyRevisionName, latest)
	if err != nil {
		return ctrl.Result{}, err
	}
	status.LatestReadyRevisionName = ready
	markReady(status, latest, ready)
	return r.Status.Write(ctx, cfg, &cfg.Status, status)
}

// readyMessage is the Ready message of a Revision, which a failed Revision's
// Configuration repeats.
func readyMessage(r *v1.Revision) string {
	if c := r.Status.GetCondition(v1.RevisionConditionReady); c != nil {
		return c.Message
	}
	return ""
}

// markReady is Knative's rule: Ready once the latest created Revision is the latest
// ready one, False when it failed (an older ready Revision keeps serving meanwhile),
// Unknown while it is on its way.
func markReady(status *v1.ConfigurationStatus, latest *v1.Revision, ready string) {
	switch {
	case latest.IsReady() && ready == latest.Name:
		status.MarkLatestReady()
	case latest.IsFailed():
		status.MarkLatestCreatedFailed(latest.Name, latest.Status.GetCondition(v1.RevisionConditionReady).Message)
	default:
		status.MarkLatestCreatedUnknown()
	}
}

// latestCreated returns the Revision of the current generation, creating it if need
// be. The name is deterministic, so a stale cache or a restarted controller can only
// get AlreadyExists, which the API server itself then explains.
func (r *Reconciler) latestCreated(ctx context.Context, cfg *v1.Configuration) (*v1.Revision, *problem, error) {
	if err := resources.CheckRevisionName(cfg); err != nil {
		return nil, &problem{mark: func(s *v1.ConfigurationStatus) { s.MarkInvalidRevisionName(err.Error()) }}, nil
	}
	key := client.ObjectKey{Namespace: cfg.Namespace, Name: resources.RevisionName(cfg)}
	desired := resources.MakeRevision(config.ToContextFrom(ctx, r.Config), cfg)
	rev := &v1.Revision{}
	err := r.Children.Get(ctx, key, rev, cfg.UID)
	if apierrors.IsNotFound(err) {
		err = r.Refused.Create(desired, func() error { return r.Children.Create(ctx, r.Client, desired) })
		refused, isRefused := refusal.As(err)
		switch {
		case err == nil:
			return desired, nil, nil
		case isRefused:
			// Asking again at once cannot help: the template or the cluster's rules
			// must change first. Try again after the back-off.
			return nil, &problem{func(s *v1.ConfigurationStatus) { s.MarkRevisionCreationFailed(refused.Message()) }, refused}, nil
		case !apierrors.IsAlreadyExists(err):
			return nil, nil, err
		}
		err = r.APIReader.Get(ctx, key, rev)
	}
	if err != nil {
		return nil, nil, err
	}
	if !resources.IsLatestCreated(rev, desired, cfg) {
		return nil, &problem{mark: func(s *v1.ConfigurationStatus) { s.MarkRevisionNameTaken(key.Name) }}, nil
	}
	return rev, nil, nil
}

// latestReady is the latest created Revision when it is Ready, else the newest Ready
// Revision of the Configuration. It never moves back to an older Revision while the
// current one exists: a Revision that was ready and stops being so keeps its traffic,
// as in Knative.
func (r *Reconciler) latestReady(ctx context.Context, cfg *v1.Configuration, current string, latest *v1.Revision) (string, error) {
	revs := &v1.RevisionList{}
	if err := r.Client.List(ctx, revs, client.InNamespace(cfg.Namespace),
		client.MatchingFields{index.RevisionsByConfiguration: cfg.Name}); err != nil {
		return "", err
	}
	return pickLatestReady(cfg, revs.Items, current, latest.Name), nil
}

// pickLatestReady decides from revs alone, one read of the cache, as before rollbacks:
// latest's readiness as Get read it may be newer than the list's, and a Route woken by
// a latestReady that the Route's own reads do not show yet changes what the convergence
// simulation explores (its tracker sensitivity stopped finding knative/serving#2954).
func pickLatestReady(cfg *v1.Configuration, revs []v1.Revision, current, latest string) string {
	best, bestGen := "", int64(-1)
	for i := range revs {
		rev := &revs[i]
		if !metav1.IsControlledBy(rev, cfg) {
			continue
		}
		// Knative sorts the template's named Revision first: one taken back by a
		// rollback is older than the Revision it replaces, and serves once Ready.
		if rev.Name == latest && rev.IsReady() {
			return rev.Name
		}
		if g := resources.Generation(rev); (rev.Name == current || rev.IsReady()) && g > bestGen {
			best, bestGen = rev.Name, g
		}
	}
	return best
}
