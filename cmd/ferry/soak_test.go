package main

import (
	"context"
	"io"
	"strings"
	"testing"
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
