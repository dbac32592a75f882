package dashboard

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/api/serving/v1beta1"
	"github.com/ferry-serving/ferry/internal/explain"
)

// serviceRow is one Service in the list.
type serviceRow struct {
	Namespace, Name string
	// Ready is the Ready condition's status; Why is explain's culprit when not True.
	Ready, Why  string
	URL, Latest string
	Traffic     []SplitTarget
}

type listView struct {
	Namespace  string // the filter; "" is every namespace
	Namespaces []string
	Rows       []serviceRow
	Total      int
	Page, Last int // 1-based
	Prev, Next string
	From, To   int
}

// listView is a page of Services, by namespace and name, with explain's line for
// every one that is not Ready. An unknown namespace is an error (a 404).
func (d *Dashboard) listView(ctx context.Context, q url.Values) (listView, error) {
	v := listView{Namespace: q.Get("namespace"), Page: 1}
	if p, err := strconv.Atoi(q.Get("page")); err == nil && p > 0 {
		v.Page = p
	}
	var all v1.ServiceList
	// The rows are rendered, never written back: no copy of 5,000 Services.
	if err := d.model.Reader().List(ctx, &all, client.UnsafeDisableDeepCopy); err != nil {
		return v, err
	}
	seen := map[string]bool{}
	svcs := make([]*v1.Service, 0, len(all.Items))
	for i := range all.Items {
		s := &all.Items[i]
		if !seen[s.Namespace] {
			seen[s.Namespace] = true
			v.Namespaces = append(v.Namespaces, s.Namespace)
		}
		if v.Namespace == "" || s.Namespace == v.Namespace {
			svcs = append(svcs, s)
		}
	}
	slices.Sort(v.Namespaces)
	if v.Namespace != "" && !seen[v.Namespace] {
		return v, errMissing{fmt.Sprintf("Namespace %q has no Knative Services (or does not exist).", v.Namespace)}
	}
	slices.SortFunc(svcs, func(a, b *v1.Service) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	v.Total = len(svcs)
	v.Last = max(1, (len(svcs)+pageSize-1)/pageSize)
	v.Page = min(v.Page, v.Last)
	from, to := (v.Page-1)*pageSize, min(v.Page*pageSize, len(svcs))
	v.From, v.To = from+1, to
	for _, s := range svcs[from:to] {
		v.Rows = append(v.Rows, d.row(ctx, s))
	}
	page := func(p int) string {
		u := url.Values{"page": {strconv.Itoa(p)}}
		if v.Namespace != "" {
			u.Set("namespace", v.Namespace)
		}
		return "/?" + u.Encode()
	}
	if v.Page > 1 {
		v.Prev = page(v.Page - 1)
	}
	if v.Page < v.Last {
		v.Next = page(v.Page + 1)
	}
	return v, nil
}

func (d *Dashboard) row(ctx context.Context, s *v1.Service) serviceRow {
	r := serviceRow{Namespace: s.Namespace, Name: s.Name, Ready: "Unknown", URL: s.Status.URL,
		Latest: cmp.Or(s.Status.LatestReadyRevisionName, s.Status.LatestCreatedRevisionName), Traffic: targets(s.Status.Traffic)}
	if c := s.Status.GetCondition(duck.ConditionReady); c != nil {
		r.Ready = string(c.Status)
	}
	if r.Ready != string(corev1.ConditionTrue) || s.Status.ObservedGeneration != s.Generation {
		chain, err := explain.Read(ctx, d.model.Reader(), explain.Target{Kind: explain.KindService, Namespace: s.Namespace, Name: s.Name})
		if err != nil {
			r.Why = err.Error()
		} else {
			r.Why = explain.Explain(chain).Culprit
		}
	}
	return r
}

func targets(tt []v1.TrafficTarget) []SplitTarget {
	out := make([]SplitTarget, 0, len(tt))
	for _, t := range tt {
		st := SplitTarget{Revision: t.RevisionName, Tag: t.Tag, URL: t.URL}
		if t.Percent != nil {
			st.Percent = *t.Percent
		}
		out = append(out, st)
	}
	return out
}

type serviceView struct {
	Service    *v1.Service
	Ready      string
	Conditions []duck.Condition
	Traffic    []SplitTarget
	// Report is explain's, shown when the Service is not Ready.
	Report         explain.Report
	Revisions      []revisionRow
	DomainMappings []v1beta1.DomainMapping
	Events         []eventRow
	Chart          trafficChart
}

type revisionRow struct {
	Name, Ready, Reason string
	Created             time.Time
	Percent             int64
	Tags                []string
	Actual, Desired     string
}

type eventRow struct {
	Type, Reason, Object, Message string
	Last                          time.Time
	Count                         int32
}

// trafficChart is a Service's traffic history as uPlot's columns: times (Unix
// seconds), then one column of percents per Revision, ending now.
type trafficChart struct {
	Revisions []string    `json:"revisions"`
	Columns   [][]float64 `json:"columns"`
}

func (d *Dashboard) serviceView(ctx context.Context, k types.NamespacedName) (serviceView, error) {
	svc := &v1.Service{}
	if err := d.model.Reader().Get(ctx, k, svc); err != nil {
		return serviceView{}, missing("Service", k, err)
	}
	v := serviceView{Service: svc, Ready: "Unknown", Conditions: svc.Status.Conditions, Traffic: targets(svc.Status.Traffic)}
	if c := svc.Status.GetCondition(duck.ConditionReady); c != nil {
		v.Ready = string(c.Status)
	}
	chain, err := explain.Read(ctx, d.model.Reader(), explain.Target{Kind: explain.KindService, Namespace: k.Namespace, Name: k.Name})
	if err != nil {
		return v, err
	}
	v.Report = explain.Build(chain)
	percents := map[string]int64{}
	tags := map[string][]string{}
	for _, t := range v.Traffic {
		percents[t.Revision] += t.Percent
		if t.Tag != "" {
			tags[t.Revision] = append(tags[t.Revision], t.Tag)
		}
	}
	revs := chain.Revisions
	slices.SortFunc(revs, func(a, b v1.Revision) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
	for _, r := range revs {
		row := revisionRow{Name: r.Name, Ready: "Unknown", Created: r.CreationTimestamp.Time, Percent: percents[r.Name], Tags: tags[r.Name],
			Actual: replicas(r.Status.ActualReplicas), Desired: replicas(r.Status.DesiredReplicas)}
		if c := r.Status.GetCondition(duck.ConditionReady); c != nil {
			row.Ready, row.Reason = string(c.Status), c.Reason
		}
		v.Revisions = append(v.Revisions, row)
	}
	var dms v1beta1.DomainMappingList
	if err := d.model.Reader().List(ctx, &dms, client.InNamespace(k.Namespace)); err != nil {
		return v, err
	}
	for _, dm := range dms.Items {
		if ref := dm.Spec.Ref; ref.Name == k.Name && (ref.Kind == "Service" || ref.Kind == "Route") {
			v.DomainMappings = append(v.DomainMappings, dm)
		}
	}
	v.Events = events(chain.Events)
	v.Chart = chart(d.model.Traffic(k), time.Now())
	return v, nil
}

func replicas(n *int32) string {
	if n == nil {
		return "–"
	}
	return strconv.Itoa(int(*n))
}

// events are the newest 20 Events, newest first.
func events(evs []corev1.Event) []eventRow {
	out := make([]eventRow, 0, len(evs))
	for _, e := range evs {
		last := e.LastTimestamp.Time
		if last.IsZero() {
			last = cmp.Or(e.EventTime.Time, e.CreationTimestamp.Time)
		}
		out = append(out, eventRow{Type: e.Type, Reason: e.Reason, Object: e.InvolvedObject.Kind + " " + e.InvolvedObject.Name,
			Message: e.Message, Last: last, Count: e.Count})
	}
	slices.SortFunc(out, func(a, b eventRow) int { return b.Last.Compare(a.Last) })
	return out[:min(len(out), 20)]
}

// chart turns the recorded splits into columns: each split holds until the next, and
// the last until now.
func chart(h []Split, now time.Time) trafficChart {
	var c trafficChart
	index := map[string]int{}
	for _, s := range h {
		for _, t := range s.Targets {
			if _, ok := index[t.Revision]; !ok {
				index[t.Revision] = len(c.Revisions)
				c.Revisions = append(c.Revisions, t.Revision)
			}
		}
	}
	c.Columns = make([][]float64, 1+len(c.Revisions))
	add := func(at time.Time, s Split) {
		c.Columns[0] = append(c.Columns[0], float64(at.UnixMilli())/1000)
		row := make([]float64, len(c.Revisions))
		for _, t := range s.Targets {
			row[index[t.Revision]] += float64(t.Percent)
		}
		for i, p := range row {
			c.Columns[i+1] = append(c.Columns[i+1], p)
		}
	}
	for _, s := range h {
		add(s.At, s)
	}
	if len(h) > 0 {
		add(now, h[len(h)-1])
	}
	return c
}

type revisionView struct {
	Revision   *v1.Revision
	Service    string
	Ready      string
	Conditions []duck.Condition
	Pods       int
	PodsReady  int
	Samples    []Sample
	// Latest is the last of Samples; nil before the first, so that the page says it
	// is asking rather than showing a row of zeros.
	Latest *Sample
}

func (d *Dashboard) revisionView(ctx context.Context, k types.NamespacedName) (revisionView, error) {
	rev := &v1.Revision{}
	if err := d.model.Reader().Get(ctx, k, rev); err != nil {
		return revisionView{}, missing("Revision", k, err)
	}
	v := revisionView{Revision: rev, Service: rev.Labels[v1.ServiceLabelKey], Ready: "Unknown", Conditions: rev.Status.Conditions}
	if c := rev.Status.GetCondition(duck.ConditionReady); c != nil {
		v.Ready = string(c.Status)
	}
	var pods corev1.PodList
	if err := d.model.Reader().List(ctx, &pods, client.InNamespace(k.Namespace), client.MatchingLabels{v1.RevisionLabelKey: k.Name}); err != nil {
		return v, err
	}
	v.Pods = len(pods.Items)
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
				v.PodsReady++
			}
		}
	}
	v.Samples = d.sampler.view(k)
	if len(v.Samples) > 0 {
		v.Latest = &v.Samples[len(v.Samples)-1]
	}
	return v, nil
}

// errMissing is a page's object or namespace that is not there: a 404.
type errMissing struct{ msg string }

func (e errMissing) Error() string { return e.msg }

func missing(kind string, k types.NamespacedName, err error) error {
	if apierrors.IsNotFound(err) {
		return errMissing{fmt.Sprintf("There is no %s %q in namespace %q.", kind, k.Name, k.Namespace)}
	}
	return err
}
