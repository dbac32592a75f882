package certificate

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// WarnAfter is how long a Certificate may stay not Ready before its owner warns: a
// provider that works issues within it (the local CA in milliseconds), so the Event
// means one that does not, or none of its class.
const WarnAfter = 10 * time.Second

// Warnings remembers, per owner, the certificate problem last reported by an Event, so
// that a problem makes one Event however often the owner is reconciled before its
// status is written. The zero value is ready to use.
type Warnings struct{ last sync.Map }

// Warn records a Warning Event on owner when its CertificateProvisioned (c) has been
// pending, or downgraded to HTTP, for WarnAfter since the newest of the Certificates
// not Ready was created; before that it returns when to look again. A False condition
// needs none here: Ready turns False with it, and the status writer records that.
func (w *Warnings) Warn(rec events.EventRecorder, owner client.Object, c *duck.Condition, certs *Certificates, now time.Time) time.Duration {
	key := types.NamespacedName{Namespace: owner.GetNamespace(), Name: owner.GetName()}
	warn := certs != nil && c != nil && (c.Status == corev1.ConditionUnknown && c.Reason == v1.ReasonCertificateNotReady ||
		c.Status == corev1.ConditionTrue && c.Reason == v1.ReasonHTTPDowngrade)
	if !warn {
		w.last.Delete(key)
		return 0
	}
	var newest time.Time
	for _, d := range certs.notReady {
		if t := d.Cert.CreationTimestamp.Time; t.After(newest) {
			newest = t
		}
	}
	// A Certificate just created has no timestamp yet: its age starts now.
	if newest.IsZero() {
		newest = now
	}
	if wait := newest.Add(WarnAfter).Sub(now); wait > 0 {
		return wait
	}
	if old, _ := w.last.Swap(key, c.Reason+"/"+c.Message); old == c.Reason+"/"+c.Message || rec == nil {
		return 0
	}
	rec.Eventf(owner, nil, corev1.EventTypeWarning, c.Reason, "Reconcile", "%s", c.Message)
	return 0
}

// Forget drops what is remembered of an owner that is gone.
func (w *Warnings) Forget(key types.NamespacedName) { w.last.Delete(key) }
