package kmeta

import corev1 "k8s.io/api/core/v1"

// Contains reports whether have holds every key of want with the same value.
func Contains(have, want map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

// Union returns have with want's keys set: keys others added stay.
func Union(have, want map[string]string) map[string]string {
	out := make(map[string]string, len(have)+len(want))
	for k, v := range have {
		out[k] = v
	}
	for k, v := range want {
		out[k] = v
	}
	return out
}

// WithoutLastApplied drops kubectl's copy of the last applied object, which describes
// the owner, not the child it is copied onto. It returns nil for an empty result, as an
// object without annotations has.
func WithoutLastApplied(in map[string]string) map[string]string {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		if k != corev1.LastAppliedConfigAnnotation {
			out[k] = v
		}
	}
	return out
}
