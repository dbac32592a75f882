package scale

import (
	"maps"
	"strings"
	"testing"
)

const metricsSample = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="serving.knative.dev",resource="services",scope="resource",subresource="",verb="POST",version="v1"} 200
apiserver_request_total{code="409",component="apiserver",dry_run="",group="serving.knative.dev",resource="services",scope="resource",subresource="",verb="POST",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="serving.knative.dev",resource="services",scope="resource",subresource="status",verb="PUT",version="v1"} 400
apiserver_request_total{code="201",component="apiserver",dry_run="All",group="serving.knative.dev",resource="services",scope="resource",subresource="",verb="POST",version="v1"} 5
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 200
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 17
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 1.5e+02
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="APPLY",version="v1"} 4
apiserver_request_total{code="0",component="",dry_run="",group="",resource="",scope="",subresource="",verb="GET",version=""} 9
apiserver_request_totalx{verb="POST"} 1000
apiserver_request_duration_seconds_count{verb="POST"} 1000
apiserver_request_total{code="200",component="apiserver",dry_run="",group="x",resource="odd\"name",scope="resource",subresource="",verb="DELETE",version="v1"} 1
`

func TestParseRequestTotals(t *testing.T) {
	got, err := ParseRequestTotals(strings.NewReader(metricsSample))
	if err != nil {
		t.Fatal(err)
	}
	want := Counts{
		{Group: "serving.knative.dev", Resource: "services", Verb: "POST"}:                       203,
		{Group: "serving.knative.dev", Resource: "services", Subresource: "status", Verb: "PUT"}: 400,
		{Resource: "pods", Subresource: "binding", Verb: "POST"}:                                 200,
		{Resource: "pods", Verb: "LIST"}:                                                         17,
		{Resource: "pods", Subresource: "status", Verb: "PATCH"}:                                 150,
		{Group: "coordination.k8s.io", Resource: "leases", Verb: "APPLY"}:                        4,
		{Verb: "GET"}: 9,
		{Group: "x", Resource: `odd"name`, Verb: "DELETE"}: 1,
	}
	if !maps.Equal(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	if _, err := ParseRequestTotals(strings.NewReader("process_cpu_seconds_total 3\n")); err == nil {
		t.Error("no error for metrics without apiserver_request_total")
	}
}

func TestCountsArithmetic(t *testing.T) {
	post := WriteKey{Resource: "pods", Verb: "POST"}
	put := WriteKey{Resource: "pods", Subresource: "status", Verb: "PUT"}
	list := WriteKey{Resource: "pods", Verb: "LIST"}
	svc := WriteKey{Group: "serving.knative.dev", Resource: "services", Verb: "PATCH"}
	before := Counts{post: 10, put: 5, list: 100}
	after := Counts{post: 30, put: 5, list: 150, svc: 7}
	d := after.Sub(before)
	if want := (Counts{post: 20, list: 50, svc: 7}); !maps.Equal(d, want) {
		t.Errorf("Sub = %v, want %v", d, want)
	}
	w := d.Writes()
	if want := (Counts{post: 20, svc: 7}); !maps.Equal(w, want) {
		t.Errorf("Writes = %v, want %v", w, want)
	}
	if w.Total() != 27 {
		t.Errorf("Total = %d", w.Total())
	}
	// A counter that went down was reset: the new value is the increase.
	if got := (Counts{post: 3}).Sub(Counts{post: 10}); got[post] != 3 {
		t.Errorf("reset counter: %v", got)
	}
	rows := (Counts{post: 20, put: 30, svc: 7}).Rows()
	if len(rows) != 3 || rows[0].Resource != "pods/status" || rows[1].Resource != "pods" || rows[2].Resource != "services.serving.knative.dev" {
		t.Errorf("Rows = %+v", rows)
	}
	if v := (Counts{put: 1, svc: 1, post: 1, {Verb: "ZAP"}: 1}).Verbs(); strings.Join(v, ",") != "POST,PUT,PATCH,ZAP" {
		t.Errorf("Verbs = %v", v)
	}
}
