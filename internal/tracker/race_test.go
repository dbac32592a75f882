package tracker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// lockedReader makes a fakeInformer safe to share between goroutines.
type lockedReader struct {
	mu  *sync.Mutex
	inf *fakeInformer
}

func (l lockedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inf.Get(ctx, key, obj, opts...)
}

func (l lockedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inf.List(ctx, list, opts...)
}

// TestConcurrentUse hammers every entry point at once; run it with -race.
// Each observer is reconciled by one goroutine at a time, as controllers do.
func TestConcurrentUse(t *testing.T) {
	const (
		observers  = 16
		objects    = 32
		iterations = 400
	)
	var tr *Tracker
	tr = New(func(o types.NamespacedName) {
		tr.GetObservers(configMap(o.Namespace, "cm0", nil)) // callbacks may call back
	}, 0).SetScheme(testScheme())

	var storeMu sync.Mutex
	inf := newFakeInformer(tr.InformerHandler())
	reader := lockedReader{&storeMu, inf}
	object := func(r *rand.Rand) *corev1.ConfigMap {
		return configMap("ns", fmt.Sprintf("cm%d", r.IntN(objects)), map[string]string{"app": fmt.Sprint(r.IntN(2))})
	}

	var wg sync.WaitGroup
	// Reconcilers: one goroutine owns each observer.
	for i := range observers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 1))
			o := nn("ns", fmt.Sprintf("route%d", i))
			for range iterations {
				rd := tr.Reader(o, reader)
				for range 1 + r.IntN(4) {
					switch r.IntN(4) {
					case 0:
						_ = rd.List(context.Background(), &corev1.ConfigMapList{}, client.InNamespace("ns"), client.MatchingLabels{"app": "1"})
					case 1:
						_ = tr.Track(selectorRef("ns", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "0"}}), o)
					default:
						_ = rd.Get(context.Background(), nn("ns", fmt.Sprintf("cm%d", r.IntN(objects))), &corev1.ConfigMap{})
					}
				}
				switch r.IntN(8) {
				case 0:
					tr.OnDeletedObserver(o)
				default:
					rd.Commit()
				}
			}
		}()
	}
	// The informer: writes and dispatches.
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 2))
			for range iterations * 4 {
				storeMu.Lock()
				if r.IntN(5) == 0 {
					cm := object(r)
					inf.remove(nn(cm.Namespace, cm.Name), r.IntN(2) == 0)
				} else {
					inf.write(object(r))
				}
				inf.deliverAll()
				storeMu.Unlock()
			}
		}()
	}
	// Readers of the tracker itself.
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(9, 3))
		for range iterations * 4 {
			tr.OnChanged(object(r))
			tr.GetObservers(object(r))
		}
	}()
	wg.Wait()

	for i := range observers {
		tr.OnDeletedObserver(nn("ns", fmt.Sprintf("route%d", i)))
	}
	if s := tr.sizes(); s != (sizes{}) {
		t.Fatalf("after deleting every observer, %+v is left", s)
	}
}
