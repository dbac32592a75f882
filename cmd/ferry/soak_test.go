package main

import (
	"context"
	"io"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ferry-serving/ferry/internal/config"
)

// A flag the chosen mode would ignore is refused before anything starts, naming it.
func TestSoakRefusesIgnoredFlags(t *testing.T) {
	cases := []struct {
		name  string
		flags soakFlags
		want  string
	}{
		{"a gateway address without a cluster", soakFlags{gateway: "http://127.0.0.1:1", isolation: "auto", pprofAddr: "0"}, "--gateway"},
		{"program isolation on a cluster", soakFlags{kubeconfig: "k", isolation: "runc", pprofAddr: "0"}, "--program-isolation"},
		{"profiles on a cluster", soakFlags{kubeconfig: "k", isolation: "auto", pprofAddr: "127.0.0.1:6060"}, "--pprof-addr"},
	}
	for _, c := range cases {
		err := runSoak(context.Background(), io.Discard, c.flags)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a refusal naming %s", c.name, err, c.want)
		}
	}
}

// The soak's own cluster keeps two non-active Revisions per Configuration: keys and
// values config-gc accepts, not ones it would refuse or ignore.
func TestSoakGCIsAValidConfigGC(t *testing.T) {
	gc, err := config.NewGCFromConfigMap(&corev1.ConfigMap{Data: soakGC})
	if err != nil {
		t.Fatal(err)
	}
	if gc.MaxNonActiveRevisions != 2 || gc.MinNonActiveRevisions != 1 {
		t.Errorf("config-gc %+v: want at most 2 non-active Revisions kept", gc)
	}
}
