package dashboard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ferry-serving/ferry/internal/autoscaler"
	"github.com/ferry-serving/ferry/internal/autoscaler/decider"
	"github.com/ferry-serving/ferry/internal/config"
)

// The controller's handler and the dashboard's client agree: a standby says it is not
// the leader, an unknown Revision is a 404, and the leader's numbers come through.
func TestNumbersOverHTTP(t *testing.T) {
	a := autoscaler.New(func(types.NamespacedName) {})
	srv := httptest.NewServer(NumbersHandler(func() *autoscaler.Autoscaler { return a }))
	defer srv.Close()
	src := FromURL(srv.URL, srv.Client())
	key := types.NamespacedName{Namespace: "ns", Name: "hello-00001"}
	ctx := context.Background()
	if _, err := src.Numbers(ctx, key); err == nil || !strings.Contains(err.Error(), "not the leader") {
		t.Errorf("a standby: %v, want not the leader", err)
	}
	leading, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = a.Start(leading) }()
	for !a.Leading() {
		time.Sleep(time.Millisecond)
	}
	if _, err := src.Numbers(ctx, key); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a Revision nobody watches: %v, want 404", err)
	}
	a.Watch(key, decider.SettingsFor(config.DefaultAutoscaler(), nil, 0), 2, true)
	n, err := src.Numbers(ctx, key)
	if err != nil || n.Revision != key.Name || n.ReadyPods != 2 || n.Target <= 0 {
		t.Errorf("the leader: %+v, %v; want the Revision's numbers with 2 ready pods", n, err)
	}
	resp, err := http.Post(srv.URL+NumbersPath, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", resp.StatusCode)
	}
}
