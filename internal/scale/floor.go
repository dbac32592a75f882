package scale

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// FloorResult is the write floor: how long the API server took for as many plain
// writes as the real run made, at the same concurrency.
type FloorResult struct {
	Namespace   string `json:"namespace"`
	Concurrency int    `json:"concurrency"`
	// Writes is the number of timed writes, ByVerb by verb.
	Writes int64            `json:"writes"`
	ByVerb map[string]int64 `json:"byVerb"`
	// Precreated objects were created before the clock started, for updates and
	// deletes of resources the run wrote but did not create (leases, nodes...).
	Precreated int `json:"precreated"`
	// Duration is the time of the timed writes; Real the real run's total.
	Duration time.Duration `json:"-"`
	Real     time.Duration `json:"-"`
	// ObservedWrites is what apiserver_request_total counted meanwhile (every
	// client's writes, the floor's among them).
	ObservedWrites int64 `json:"observedWrites"`
	// Errors counts failed writes; FirstError is the first.
	Errors     int64  `json:"errors"`
	FirstError string `json:"firstError,omitempty"`
	// Sizes is the object size used per resource, in bytes.
	Sizes map[string]int `json:"sizes"`
	// Note warns when other clients wrote meanwhile.
	Note string `json:"note,omitempty"`
}

// Ratio is real / floor: how many times longer Ferry's run took than the API server
// needs for its writes alone.
func (f *FloorResult) Ratio() float64 {
	if f == nil || f.Duration <= 0 {
		return 0
	}
	return f.Real.Seconds() / f.Duration.Seconds()
}

// MarshalJSON adds the durations in seconds and the ratio.
func (f *FloorResult) MarshalJSON() ([]byte, error) {
	type plain FloorResult
	return json.Marshal(struct {
		*plain
		Seconds     float64 `json:"seconds"`
		RealSeconds float64 `json:"realSeconds"`
		Ratio       float64 `json:"ratio"`
	}{(*plain)(f), f.Duration.Seconds(), f.Real.Seconds(), f.Ratio()})
}

// FloorOptions configure a floor run.
type FloorOptions struct {
	Config *rest.Config
	// Writes are the real run's writes, by series.
	Writes      Counts
	Concurrency int
	// Real is the real run's total time.
	Real time.Duration
	// SizeNamespace is where objects of the written resources are sampled to size
	// the ConfigMaps (the real run's namespace).
	SizeNamespace string
	// Namespace is the scratch namespace (created, then deleted).
	Namespace string
	Progress  io.Writer
	Rand      *rand.Rand
}

// FloorObject is one ConfigMap of the floor and the writes it receives, in order.
type FloorObject struct {
	Resource  string // what it stands for
	Size      int
	Precreate bool
	Ops       []string // POST, PUT, PATCH, DELETE
}

// defaultObjectSize stands in for resources that could not be sampled.
const defaultObjectSize = 1500

// maxObjectSize keeps the ConfigMaps under the API server's 1 MiB limit.
const maxObjectSize = 900 << 10

// normalVerb maps the API server's write verbs to the four the floor performs. A
// POST to a subresource (pods/binding, serviceaccounts/token) changes, or reads
// through, an existing object; it becomes an update.
func normalVerb(k WriteKey) string {
	switch strings.ToUpper(k.Verb) {
	case "POST", "CREATE":
		if k.Subresource != "" {
			return "PUT"
		}
		return "POST"
	case "PUT", "UPDATE":
		return "PUT"
	case "PATCH", "APPLY":
		return "PATCH"
	case "DELETE", "DELETECOLLECTION":
		return "DELETE"
	}
	return ""
}

// PlanFloor turns the real run's writes into ConfigMaps and the writes each gets: per
// resource (subresources count against their parent), one object per create, the
// updates and patches spread over them round-robin, deletes at the end. Resources
// updated or deleted more than created get pre-created objects. size gives the
// object size of a resource ("pods", "services.serving.knative.dev").
func PlanFloor(writes Counts, size func(resource string) int) []FloorObject {
	type verbs struct{ post, put, patch, del int64 }
	byRes := map[string]*verbs{}
	for k, n := range writes {
		res := WriteKey{Group: k.Group, Resource: k.Resource}.ResourceName()
		v := byRes[res]
		if v == nil {
			v = &verbs{}
			byRes[res] = v
		}
		switch normalVerb(k) {
		case "POST":
			v.post += n
		case "PUT":
			v.put += n
		case "PATCH":
			v.patch += n
		case "DELETE":
			v.del += n
		}
	}
	var plan []FloorObject
	for _, res := range slices.Sorted(mapsKeys(byRes)) {
		v := byRes[res]
		n := max(v.post, v.del)
		if n == 0 && v.put+v.patch > 0 {
			n = 1
		}
		if n == 0 {
			continue
		}
		s := min(max(size(res), 1), maxObjectSize)
		objs := make([]FloorObject, n)
		for k := range objs {
			objs[k] = FloorObject{Resource: res, Size: s, Precreate: int64(k) >= v.post}
			if !objs[k].Precreate {
				objs[k].Ops = append(objs[k].Ops, "POST")
			}
		}
		for j := int64(0); j < v.put; j++ {
			objs[j%n].Ops = append(objs[j%n].Ops, "PUT")
		}
		for j := int64(0); j < v.patch; j++ {
			objs[j%n].Ops = append(objs[j%n].Ops, "PATCH")
		}
		for k := int64(0); k < v.del; k++ {
			objs[k].Ops = append(objs[k].Ops, "DELETE")
		}
		plan = append(plan, objs...)
	}
	return plan
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Floor performs as many writes as the real run made, by verb, on ConfigMaps of the
// sizes of the objects written, with a plain client at the same concurrency, against
// the same API server, and times them.
func Floor(ctx context.Context, o FloorOptions) (*FloorResult, error) {
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if o.Namespace == "" {
		o.Namespace = "ferry-scale-floor-" + RandomSuffix(o.Rand)
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Writes.Total() == 0 {
		return nil, errors.New("floor: the real run's writes are unknown (was /metrics readable?)")
	}
	cfg := unthrottled(o.Config)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	sizes := sampleSizes(ctx, cfg, o.SizeNamespace, o.Writes)
	plan := PlanFloor(o.Writes, func(res string) int {
		if s, ok := sizes[res]; ok {
			return s
		}
		return defaultObjectSize
	})
	res := &FloorResult{Namespace: o.Namespace, Concurrency: o.Concurrency, ByVerb: map[string]int64{}, Real: o.Real, Sizes: sizes}
	for _, obj := range plan {
		if obj.Precreate {
			res.Precreated++
		}
		for _, op := range obj.Ops {
			res.ByVerb[op]++
			res.Writes++
		}
	}
	o.Rand.Shuffle(len(plan), func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })

	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.Namespace}}, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("floor: creating namespace %s: %w", o.Namespace, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = cs.CoreV1().Namespaces().Delete(dctx, o.Namespace, metav1.DeleteOptions{})
	}()

	w := &floorWriter{cms: cs.CoreV1().ConfigMaps(o.Namespace), res: res}
	// Untimed: the objects that stand for ones the run found already there.
	current := make([]*corev1.ConfigMap, len(plan))
	if res.Precreated > 0 {
		fmt.Fprintf(o.Progress, "floor: pre-creating %d ConfigMaps for the writes to objects the run did not create ...\n", res.Precreated)
	}
	w.parallel(ctx, o.Concurrency, len(plan), func(i int) {
		if plan[i].Precreate {
			current[i] = w.create(ctx, i, plan[i].Size)
		}
	})
	before, beforeErr := ScrapeRequestTotals(ctx, cfg)
	fmt.Fprintf(o.Progress, "floor: %d plain writes (%s) at concurrency %d ...\n", res.Writes, formatVerbs(res.ByVerb), o.Concurrency)
	start := time.Now()
	w.parallel(ctx, o.Concurrency, len(plan), func(i int) {
		cm := current[i]
		for _, op := range plan[i].Ops {
			switch op {
			case "POST":
				cm = w.create(ctx, i, plan[i].Size)
			case "PUT":
				cm = w.update(ctx, i, cm)
			case "PATCH":
				cm = w.patch(ctx, i, cm)
			case "DELETE":
				w.delete(ctx, i)
				cm = nil
			}
		}
	})
	res.Duration = time.Since(start)
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if after, err := ScrapeRequestTotals(ctx, cfg); err == nil && beforeErr == nil {
		res.ObservedWrites = after.Sub(before).Writes().Total()
		if other := res.ObservedWrites - res.Writes; other > res.Writes/20 {
			res.Note = fmt.Sprintf("the API server served %d other writes during the floor (controllers still at work?): the floor is slower than an idle API server's", other)
		}
	}
	return res, nil
}

func formatVerbs(m map[string]int64) string {
	var parts []string
	for _, v := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		if m[v] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", v, m[v]))
		}
	}
	return strings.Join(parts, ", ")
}

type configMaps interface {
	Create(ctx context.Context, cm *corev1.ConfigMap, opts metav1.CreateOptions) (*corev1.ConfigMap, error)
	Update(ctx context.Context, cm *corev1.ConfigMap, opts metav1.UpdateOptions) (*corev1.ConfigMap, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.ConfigMap, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

type floorWriter struct {
	cms     configMaps
	res     *FloorResult
	errs    atomic.Int64
	errOnce sync.Once
	seq     atomic.Int64
}

func (w *floorWriter) fail(err error) {
	w.res.Errors = w.errs.Add(1)
	w.errOnce.Do(func() { w.res.FirstError = err.Error() })
}

// parallel runs f(0..n-1) on c workers.
func (w *floorWriter) parallel(ctx context.Context, c, n int, f func(int)) {
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range min(c, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
	w.res.Errors = w.errs.Load()
}

func floorName(i int) string { return fmt.Sprintf("floor-%06d", i) }

func (w *floorWriter) create(ctx context.Context, i, size int) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: floorName(i), Labels: map[string]string{"ferry.dev/scale-floor": "true"}},
		Data: map[string]string{"payload": strings.Repeat("x", size)}}
	got, err := w.cms.Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		w.fail(err)
		return cm
	}
	return got
}

func (w *floorWriter) update(ctx context.Context, i int, cm *corev1.ConfigMap) *corev1.ConfigMap {
	if cm == nil {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: floorName(i)}}
	}
	cm = cm.DeepCopy()
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data["seq"] = fmt.Sprint(w.seq.Add(1))
	got, err := w.cms.Update(ctx, cm, metav1.UpdateOptions{})
	if err != nil {
		w.fail(err)
		return cm
	}
	return got
}

func (w *floorWriter) patch(ctx context.Context, i int, cm *corev1.ConfigMap) *corev1.ConfigMap {
	p := fmt.Appendf(nil, `{"data":{"patched":"%d"}}`, w.seq.Add(1))
	got, err := w.cms.Patch(ctx, floorName(i), types.MergePatchType, p, metav1.PatchOptions{})
	if err != nil {
		w.fail(err)
		return cm
	}
	return got
}

func (w *floorWriter) delete(ctx context.Context, i int) {
	if err := w.cms.Delete(ctx, floorName(i), metav1.DeleteOptions{}); err != nil {
		w.fail(err)
	}
}

// sampleSizes measures the mean JSON size of up to 20 objects of each written
// resource, in ns if it has some, else anywhere. Resources that cannot be listed
// are left out (the caller uses a default).
func sampleSizes(ctx context.Context, cfg *rest.Config, ns string, writes Counts) map[string]int {
	sizes := map[string]int{}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return sizes
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return sizes
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	seen := map[string]bool{}
	for k := range writes {
		res := WriteKey{Group: k.Group, Resource: k.Resource}.ResourceName()
		if seen[res] {
			continue
		}
		seen[res] = true
		gvr, err := mapper.ResourceFor(schema.GroupVersionResource{Group: k.Group, Resource: k.Resource})
		if err != nil {
			continue
		}
		var total, count int
		for _, where := range []string{ns, ""} {
			l, err := dyn.Resource(gvr).Namespace(where).List(ctx, metav1.ListOptions{Limit: 20})
			if err != nil || len(l.Items) == 0 {
				continue
			}
			for _, item := range l.Items {
				b, err := json.Marshal(item.Object)
				if err == nil {
					total += len(b)
					count++
				}
			}
			break
		}
		if count > 0 {
			sizes[res] = total / count
		}
	}
	return sizes
}
