package localcluster

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestEtcdKeepsNoWritesInMemory: the local etcd does not hold what it was written in
// memory (etcd's default keeps the last 5,000 writes for followers a single member
// does not have). An hour's soak found the main process growing by that log.
func TestEtcdKeepsNoWritesInMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd")
	}
	url, stop, err := startEtcd(t.TempDir(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// Writes of 32 KiB over the same 10 keys, so the store itself stays small: after
	// the first 500, the next 1,000 add 32 MiB if etcd keeps them, nothing if it
	// keeps a bounded tail.
	const size = 32 << 10
	value := strings.Repeat("x", size)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	put := func(n int) {
		for i := range n {
			if _, err := c.Put(ctx, fmt.Sprintf("/k/%d", i%10), value); err != nil {
				t.Fatal(err)
			}
		}
		// etcd compacts its log and commits its batch a moment after the apply.
		time.Sleep(300 * time.Millisecond)
	}
	put(500)
	before := liveHeap()
	const writes = 1000
	put(writes)
	grew := int64(liveHeap()) - int64(before)
	if limit := int64(writes * size / 4); grew > limit {
		t.Errorf("%d more writes of %d KiB grew the live heap by %d MiB (bound %d MiB): etcd keeps its writes in memory",
			writes, size>>10, grew>>20, limit>>20)
	}
	t.Logf("%d more writes of %d KiB: live heap %+d KiB", writes, size>>10, grew>>10)
}

// liveHeap is the live heap after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	m := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(m)
	return m[0].Value.Uint64()
}
