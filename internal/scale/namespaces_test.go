package scale

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
)

func TestNamespaceNames(t *testing.T) {
	base := "ferry-scale-20261130-090800-abcd"
	for _, tc := range []struct {
		base string
		k    int
		want []string
	}{
		{base, 0, []string{base}},
		{base, 1, []string{base}},
		{base, 2, []string{base + "-0", base + "-1"}},
		{"load", 3, []string{"load-0", "load-1", "load-2"}},
		{"load", 12, []string{"load-0", "load-1", "load-2", "load-3", "load-4", "load-5", "load-6", "load-7", "load-8", "load-9", "load-10", "load-11"}},
	} {
		got := NamespaceNames(tc.base, tc.k)
		if !slices.Equal(got, tc.want) {
			t.Errorf("NamespaceNames(%q, %d) = %q, want %q", tc.base, tc.k, got, tc.want)
		}
		for _, ns := range got {
			if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
				t.Errorf("%q is no namespace name: %v", ns, errs)
			}
		}
	}
	// The default base with a 100,000th namespace is still a DNS label.
	if errs := validation.IsDNS1123Label(NamespaceNames(base, 100000)[99999]); len(errs) > 0 {
		t.Errorf("the default base's namespace 99999 is no DNS label: %v", errs)
	}
}

func TestNamespaceIndex(t *testing.T) {
	for _, tc := range []struct {
		n, k int
		want []int // the namespace of Service 0, 1, …, n-1
	}{
		{4, 0, []int{0, 0, 0, 0}},
		{4, 1, []int{0, 0, 0, 0}},
		{4, 2, []int{0, 1, 0, 1}},
		{7, 3, []int{0, 1, 2, 0, 1, 2, 0}},
		{3, 3, []int{0, 1, 2}},
	} {
		got := make([]int, tc.n)
		for i := range got {
			got[i] = NamespaceIndex(i, tc.k)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("NamespaceIndex(0…%d, %d) = %v, want %v", tc.n-1, tc.k, got, tc.want)
		}
	}
	// Round-robin spreads N over K evenly: the counts differ by at most one.
	for _, nk := range [][2]int{{60, 3}, {5000, 50}, {101, 10}, {9, 9}} {
		n, k := nk[0], nk[1]
		count := make([]int, k)
		for i := range n {
			count[NamespaceIndex(i, k)]++
		}
		if lo, hi := slices.Min(count), slices.Max(count); hi-lo > 1 || lo != n/k {
			t.Errorf("N=%d over K=%d: %d to %d per namespace", n, k, lo, hi)
		}
	}
}

func TestNamespacesOption(t *testing.T) {
	cfg := &rest.Config{}
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name      string
		o         Options
		want      int    // Namespaces after the defaults
		wantError string // or this error
	}{
		{"default", Options{N: 5}, 1, ""},
		{"one", Options{N: 5, Namespaces: 1}, 1, ""},
		{"as many as Services", Options{N: 5, Namespaces: 5}, 5, ""},
		{"more than Services", Options{N: 5, Namespaces: 6}, 0, "between 1 and N (5), not 6"},
		{"negative", Options{N: 5, Namespaces: -1}, 0, "between 1 and N (5), not -1"},
		{"base too long", Options{N: 5, Namespaces: 2, Namespace: strings.Repeat("x", 62)}, 0, "no valid namespace name"},
		{"long base alone is the API server's to judge", Options{N: 5, Namespace: strings.Repeat("x", 64)}, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Config, tc.o.Rand = cfg, r
			o, err := tc.o.withDefaults()
			switch {
			case tc.wantError != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Errorf("error = %v, want one with %q", err, tc.wantError)
				}
			case err != nil:
				t.Errorf("error = %v", err)
			case o.Namespaces != tc.want:
				t.Errorf("Namespaces = %d, want %d", o.Namespaces, tc.want)
			}
		})
	}
}

func TestDescribeNamespaces(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{[]string{"ns"}, "namespace ns"},
		{NamespaceNames("ns", 2), "2 namespaces (ns-0 … ns-1)"},
		{NamespaceNames("ferry-scale-x", 50), "50 namespaces (ferry-scale-x-0 … ferry-scale-x-49)"},
	} {
		if got := describeNamespaces(tc.names); got != tc.want {
			t.Errorf("describeNamespaces(%q) = %q, want %q", tc.names, got, tc.want)
		}
	}
}

func TestCreatedNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Result
		want []string
	}{
		{"one, created", Result{Namespace: "a", NamespaceCreated: true}, []string{"a"}},
		{"one, there", Result{Namespace: "a"}, nil},
		{"several, some created", Result{Namespace: "a-0", Namespaces: []string{"a-0", "a-1", "a-2"}, NamespacesCreated: []string{"a-1", "a-2"}}, []string{"a-1", "a-2"}},
	} {
		var got []string
		for _, ns := range tc.r.AllNamespaces() {
			if tc.r.createdNamespaces()[ns] {
				got = append(got, ns)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: created %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestFilterList: the KIngresses listed cluster-wide are cut down to the run's
// namespaces.
func TestFilterList(t *testing.T) {
	ing := func(ns, name string) netv1alpha1.Ingress {
		return netv1alpha1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	l := &netv1alpha1.IngressList{Items: []netv1alpha1.Ingress{ing("r-0", "a"), ing("other", "b"), ing("r-1", "c"), ing("", "d")}}
	if err := filterList(l, map[string]bool{"r-0": true, "r-1": true}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, i := range l.Items {
		got = append(got, i.Namespace+"/"+i.Name)
	}
	if want := []string{"r-0/a", "r-1/c"}; !slices.Equal(got, want) {
		t.Errorf("kept %q, want %q", got, want)
	}
}

// TestReportsNamespaces: a run over several namespaces says so in the summary's
// header, report.json and the HTML; a run in one is reported as before.
func TestReportsNamespaces(t *testing.T) {
	one := sampleResult(t)
	several := sampleResult(t)
	several.Namespaces = NamespaceNames("ferry-scale-20261130-090800-abcd", 3)
	several.Namespace = several.Namespaces[0]
	for i := range several.Samples {
		several.Samples[i].Namespace = several.Namespaces[NamespaceIndex(i, 3)]
	}
	for _, tc := range []struct {
		name       string
		r          *Result
		header     string
		namespaces []string
	}{
		{"one", one, "Ferry scale run 20261130-090800-abcd: 4 Services in namespace ferry-scale-20261130-090800-abcd, 2 creates in flight",
			[]string{"ferry-scale-20261130-090800-abcd"}},
		{"several", several, "Ferry scale run 20261130-090800-abcd: 4 Services in 3 namespaces (ferry-scale-20261130-090800-abcd-0 … ferry-scale-20261130-090800-abcd-2), 2 creates in flight",
			several.Namespaces},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			WriteSummary(&b, tc.r, 10)
			if !strings.Contains(b.String(), tc.header) {
				t.Errorf("the summary lacks %q:\n%s", tc.header, b.String())
			}
			b.Reset()
			if err := RenderHTML(&b, tc.r); err != nil {
				t.Fatal(err)
			}
			if want := describeNamespaces(tc.namespaces); !strings.Contains(b.String(), "· "+want+" ·") {
				t.Errorf("the HTML lacks %q", want)
			}
			j, err := json.Marshal(tc.r)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Namespace  string   `json:"namespace"`
				Namespaces []string `json:"namespaces"`
				Samples    []Sample `json:"samples"`
			}
			if err := json.Unmarshal(j, &got); err != nil {
				t.Fatal(err)
			}
			if got.Namespace != tc.namespaces[0] || !slices.Equal(got.Namespaces, tc.namespaces) {
				t.Errorf("report.json: namespace %q, namespaces %q", got.Namespace, got.Namespaces)
			}
			for i, s := range got.Samples {
				if s.Namespace != tc.r.Samples[i].Namespace {
					t.Errorf("sample %d: namespace %q, want %q", i, s.Namespace, tc.r.Samples[i].Namespace)
				}
			}
		})
	}
}
