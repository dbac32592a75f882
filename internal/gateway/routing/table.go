package routing

import (
	"hash/maphash"
	"maps"
)

// tableShards splits the host index so that programming one ingress copies one small
// shard instead of a map of every host (see docs/gateway.md for the numbers).
const tableShards = 256

// Table is an immutable routing snapshot. Listeners load the current one with an
// atomic read per request and never lock; the programmer publishes a new one per
// change, sharing every untouched shard with its predecessor.
type Table struct {
	shards [tableShards]map[string]*VirtualHost
}

var shardSeed = maphash.MakeSeed()

func shardOf(host string) int {
	return int(maphash.String(shardSeed, host) % tableShards)
}

// Lookup returns what a canonical host serves, or nil.
func (t *Table) Lookup(host string) *VirtualHost {
	return t.shards[shardOf(host)][host]
}

// with returns a copy of t with changes applied; a nil value removes the host.
func (t *Table) with(changes map[string]*VirtualHost) *Table {
	next := *t
	copied := map[int]bool{}
	for host, vh := range changes {
		i := shardOf(host)
		if !copied[i] {
			shard := maps.Clone(next.shards[i])
			if shard == nil {
				shard = map[string]*VirtualHost{}
			}
			next.shards[i] = shard
			copied[i] = true
		}
		if vh == nil {
			delete(next.shards[i], host)
		} else {
			next.shards[i][host] = vh
		}
	}
	return &next
}
