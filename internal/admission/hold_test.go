package admission

import (
	"context"
	"strings"
	"testing"
	"time"

	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/backpressure"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestHolderHoldsOnlyValidCreates(t *testing.T) {
	full := backpressure.New(1)
	full.OnAdd(&servingv1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "busy", Generation: 1}}, false)
	h := &Holder{Backlog: full}
	// The API server would end the request at the webhook's timeout; here a short
	// deadline stands in for it.
	check := func(name string, holder *Holder, op string, obj string, dry bool, wantHeld bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		req := request("Service", op, obj)
		req.DryRun = &dry
		start := time.Now()
		resp := holder.Handle(ctx, req)
		took := time.Since(start)
		if !resp.Allowed {
			t.Errorf("%s: refused: %+v", name, resp.Result)
		}
		held := took >= 250*time.Millisecond
		warned := len(resp.Warnings) == 1 && strings.Contains(resp.Warnings[0], "Ferry held this create for 300ms: Services on their way to Ready: 1 (the limit is 1)")
		if held != wantHeld || warned != wantHeld {
			t.Errorf("%s: took %v with warnings %q; want held %v", name, took, resp.Warnings, wantHeld)
		}
	}
	// What the validating webhooks see: the Service as defaulted.
	valid := strings.Replace(svcJSON, `}]}}}}`, `}]}},"traffic":[{"latestRevision":true,"percent":100}]}}`, 1)
	invalid := strings.Replace(valid, `"containers"`, `"nodeSelector":{"a":"b"},"containers"`, 1)
	check("a valid create", h, "CREATE", valid, false, true)
	check("an invalid create, refused by the validating webhook", h, "CREATE", invalid, false, false)
	check("a dry run", h, "CREATE", valid, true, false)
	check("an update", h, "UPDATE", valid, false, false)
	check("without a backlog", &Holder{}, "CREATE", valid, false, false)

	empty := &Holder{Backlog: backpressure.New(1)}
	check("below the limit", empty, "CREATE", valid, false, false)
}
