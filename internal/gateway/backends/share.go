package backends

// The per-request share: each replica may use part of every pod's
// containerConcurrency, by its place among the live replicas.

// Membership is how many replicas are live and which of them this one is, in the
// order of their Lease names.
type Membership struct{ Count, index int }

var alone = &Membership{Count: 1}

// share is the part of a pod's containerConcurrency c that replica index of count may
// use, for the pod at position rank among its revision's endpoints (sorted by
// address, as every replica sorts them). The revision's slots are dealt round robin:
// slot s of the pod at rank p is number p·c+s and goes to replica (p·c+s) mod count.
// So the replicas' shares of a pod sum to c, every replica gets ⌊c/count⌋ or one
// more of each pod, and with c < count each pod's slots go to different replicas
// pod after pod. A share can be 0: that replica may not send the pod anything.
func share(c int64, rank int, m Membership) int64 {
	if c <= 0 || m.Count <= 1 {
		return c
	}
	first := int64(rank) * c
	return slotsBelow(first+c, m) - slotsBelow(first, m)
}

// slotsBelow counts the slot numbers in [0, x) that go to replica m.index.
func slotsBelow(x int64, m Membership) int64 {
	i, n := int64(m.index), int64(m.Count)
	if x <= i {
		return 0
	}
	return (x-i-1)/n + 1
}
