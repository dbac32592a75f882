package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
)

// A reconcile's log line, as controller-runtime's logger in the context makes it,
// is one JSON object naming the object by default, and readable text on request.
func TestLogFormat(t *testing.T) {
	reconcileLine := func(format string) (string, error) {
		var buf bytes.Buffer
		l, err := (&clusterFlags{logFormat: format}).logger(&buf)
		if err != nil {
			return "", err
		}
		// What controller-runtime puts in each reconcile's context.
		ctx := log.IntoContext(context.Background(), l.WithValues("controller", "route", "namespace", "default", "name", "hello"))
		log.FromContext(ctx).Info("Reconciled")
		return buf.String(), nil
	}

	line, err := reconcileLine("json")
	if err != nil {
		t.Fatal(err)
	}
	var entry map[string]any
	if err := json.Unmarshal([]byte(line), &entry); err != nil {
		t.Fatalf("--log-format=json wrote %q: %v", line, err)
	}
	for k, want := range map[string]string{"msg": "Reconciled", "namespace": "default", "name": "hello", "level": "info"} {
		if entry[k] != want {
			t.Errorf("%s = %v, want %q in %s", k, entry[k], want, line)
		}
	}

	line, err = reconcileLine("console")
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(line, "{") || !strings.Contains(line, "Reconciled") || !strings.Contains(line, `"name": "hello"`) {
		t.Errorf("--log-format=console wrote %q", line)
	}

	if _, err := reconcileLine("yaml"); err == nil {
		t.Error("--log-format=yaml was accepted")
	}
}

// A lease the Lease object cannot hold exactly is refused before anything starts.
func TestLeaseDurationChecked(t *testing.T) {
	for lease, ok := range map[time.Duration]bool{
		15 * time.Second: true, 2 * time.Second: true,
		1500 * time.Millisecond: false, time.Second: false, 2500 * time.Millisecond: false, 0: false,
	} {
		err := (&clusterFlags{lease: lease}).checkLease()
		if (err == nil) != ok {
			t.Errorf("lease %s: error %v, want ok=%v", lease, err, ok)
		}
	}
}
