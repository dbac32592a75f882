package tracker

import (
	"context"

	"fmt"
	"runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const benchObservers = 100_000

// benchWorld is benchObservers observers in 1000 namespaces, each tracking
// one ConfigMap of its own.
type benchWorld struct {
	refs      []Reference
	observers []types.NamespacedName
	objects   []*corev1.ConfigMap // with TypeMeta, as informers deliver
	typed     []*corev1.ConfigMap // without, as controller-runtime's cache does
}

func newBenchWorld() *benchWorld {
	w := &benchWorld{}
	for i := range benchObservers {
		ns := fmt.Sprintf("ns%d", i%1000)
		name := fmt.Sprintf("config-%d", i)
		w.refs = append(w.refs, exactRef(ns, name))
		w.observers = append(w.observers, nn(ns, fmt.Sprintf("route-%d", i)))
		typed := configMap(ns, name, map[string]string{"app": fmt.Sprintf("app-%d", i%100)})
		obj := typed.DeepCopy()
		obj.APIVersion, obj.Kind = "v1", "ConfigMap"
		w.objects = append(w.objects, obj)
		w.typed = append(w.typed, typed)
	}
	return w
}

// fill tracks every pair and returns the tracker's own heap per pair (the
// names are allocated beforehand, so only the tracker's structures count).
// Report it after the loop: ResetTimer forgets reported metrics.
func (w *benchWorld) fill(b *testing.B, tr *Tracker) (bytesPerPair float64) {
	before := heapInUse()
	for i, ref := range w.refs {
		if err := tr.Track(ref, w.observers[i]); err != nil {
			b.Fatal(err)
		}
	}
	return float64(heapInUse()-before) / float64(len(w.refs))
}

func BenchmarkTrack(b *testing.B) {
	w := newBenchWorld()
	b.Run("retrack-100k", func(b *testing.B) {
		tr := New(nil, 0)
		perPair := w.fill(b, tr)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			j := i % benchObservers
			if err := tr.Track(w.refs[j], w.observers[j]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(perPair, "B/pair")
	})
	b.Run("reader-get-100k", func(b *testing.B) {
		// The reader's registration alone: its store read is a no-op.
		tr := New(nil, 0).SetScheme(testScheme())
		w.fill(b, tr)
		readers := make([]*TrackingReader, benchObservers)
		for j := range readers {
			readers[j] = tr.Reader(w.observers[j], nopReader{})
		}
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			j := i % benchObservers
			_ = readers[j].Get(ctx, types.NamespacedName{Namespace: w.refs[j].Namespace, Name: w.refs[j].Name}, w.typed[j])
		}
	})
}

func BenchmarkOnChanged(b *testing.B) {
	w := newBenchWorld()
	var enqueued int
	enqueue := func(types.NamespacedName) { enqueued++ }

	b.Run("exact-100k", func(b *testing.B) {
		tr := New(enqueue, 0)
		w.fill(b, tr)
		enqueued = 0
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			tr.OnChanged(w.objects[i%benchObservers])
		}
		b.StopTimer()
		if enqueued != b.N {
			b.Fatalf("%d events enqueued %d observers, want one each", b.N, enqueued)
		}
	})
	b.Run("exact-100k-no-typemeta", func(b *testing.B) {
		tr := New(enqueue, 0).SetScheme(testScheme())
		w.fill(b, tr)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			tr.OnChanged(w.typed[i%benchObservers])
		}
	})
	b.Run("exact-100k-with-selectors", func(b *testing.B) {
		// Plus one selector per namespace, so every change also scans a scope.
		tr := New(enqueue, 0)
		w.fill(b, tr)
		for i := range 1000 {
			ns := fmt.Sprintf("ns%d", i)
			mustTrack(b, tr, selectorRef(ns, &metav1.LabelSelector{MatchLabels: map[string]string{"app": "none"}}), nn(ns, "lister"))
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			tr.OnChanged(w.objects[i%benchObservers])
		}
	})
	b.Run("untracked-100k", func(b *testing.B) {
		tr := New(enqueue, 0)
		w.fill(b, tr)
		other := w.objects[0].DeepCopy()
		other.Name = "nobody-tracks-this"
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			tr.OnChanged(other)
		}
	})
	b.Run("selector-100k", func(b *testing.B) {
		// 100k observers each listing the objects labelled with its name,
		// as Routes list their Revisions: 100 selectors per namespace, and
		// each change matches one.
		tr := New(enqueue, 0)
		before := heapInUse()
		for _, o := range w.observers {
			mustTrack(b, tr, selectorRef(o.Namespace, &metav1.LabelSelector{
				MatchLabels: map[string]string{"route": o.Name},
			}), o)
		}
		perPair := float64(heapInUse()-before) / benchObservers
		labelled := make([]*corev1.ConfigMap, benchObservers)
		for i, obj := range w.objects {
			labelled[i] = obj.DeepCopy()
			labelled[i].Labels = map[string]string{"route": w.observers[i].Name, "app": "x"}
		}
		enqueued = 0
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			tr.OnChanged(labelled[i%benchObservers])
		}
		b.StopTimer()
		if enqueued != b.N {
			b.Fatalf("%d events enqueued %d observers, want one each", b.N, enqueued)
		}
		b.ReportMetric(perPair, "B/pair")
	})
	runtime.KeepAlive(enqueued)
}

type nopReader struct{}

func (nopReader) Get(_ context.Context, _ client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	return nil
}

func (nopReader) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }
