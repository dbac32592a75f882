package config

import (
	"reflect"
	"slices"
	"testing"

	"github.com/ferry-serving/ferry/config/configmaps"
)

// TestShippedConfigMaps: each ConfigMap that kubectl apply -k config/ installs and
// ferry up creates parses as the Store parses it, into Knative's defaults, and sets no
// key that would be reported as having no effect.
func TestShippedConfigMaps(t *testing.T) {
	cms, err := configmaps.All()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	// Empty, not the defaults: a part that no file sets stays nil and is caught.
	got := &Config{}
	for _, cm := range cms {
		names = append(names, cm.Name)
		if cm.Namespace != SystemNamespace {
			t.Errorf("%s is in %s, want %s", cm.Name, cm.Namespace, SystemNamespace)
		}
		if err := parseInto(got, cm); err != nil {
			t.Errorf("%s: %v", cm.Name, err)
		}
		if lines := NoEffect(cm.Name, cm.Data); lines != nil {
			t.Errorf("%s warns on every start: %v", cm.Name, lines)
		}
	}
	slices.Sort(names)
	want := slices.Sorted(slices.Values(Names))
	if !slices.Equal(names, want) {
		t.Errorf("shipped %v, want the ConfigMaps the Store watches %v", names, want)
	}
	if d := Default(); !reflect.DeepEqual(got, d) {
		t.Errorf("shipped ConfigMaps parse to %+v, want the defaults %+v", got, d)
	}
}
