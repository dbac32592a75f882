package main

import (
	"strings"
	"testing"
)

// --controller-metrics reads a controller that runs elsewhere: refused without
// --kubeconfig, and when it is not a URL the metrics could be read from.
func TestControllerMetricsFlagChecked(t *testing.T) {
	for _, tc := range []struct {
		kubeconfig, metrics string
		wantErr             string
	}{
		{kubeconfig: "k", metrics: "http://127.0.0.1:9090/metrics"},
		{kubeconfig: "k", metrics: ""},
		{kubeconfig: "", metrics: "http://127.0.0.1:9090/metrics", wantErr: "is for --kubeconfig"},
		{kubeconfig: "k", metrics: "127.0.0.1:9090", wantErr: "must be an http(s) URL"},
		{kubeconfig: "k", metrics: "http:///metrics", wantErr: "must be an http(s) URL"},
	} {
		f := scaleFlags{n: 1, namespaces: 1, kubeconfig: tc.kubeconfig, metrics: tc.metrics}
		err := f.check()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("--controller-metrics %q with --kubeconfig %q: %v", tc.metrics, tc.kubeconfig, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("--controller-metrics %q with --kubeconfig %q: %v, want %q", tc.metrics, tc.kubeconfig, err, tc.wantErr)
		}
	}
}
