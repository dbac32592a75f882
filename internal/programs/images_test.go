package programs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseImages(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "app")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	notExe := filepath.Join(dir, "data")
	if err := os.WriteFile(notExe, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	im, err := ParseImages([]string{"example.com/app:1=app", "ko.local/helloworld:latest=ko://knative.dev/serving/test/test_images/helloworld"}, dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for image, want := range map[string]bool{
		"example.com/app:1": true, "example.com/app:2": false, "example.com/app": false,
		"ko.local/helloworld:latest": true, "ko://example.com/any": true, "docker.io/nginx": false,
	} {
		if got := im.Runs(image); got != want {
			t.Errorf("Runs(%q) = %v, want %v", image, got, want)
		}
	}
	p, err := im.Resolve(context.Background(), "example.com/app:1", nil)
	if err != nil || p.Path != exe || p.InContainer() != "/ko-app/app" || p.Ko {
		t.Errorf("a relative executable resolves to %+v, %v; want %s at /ko-app/app", p, err, exe)
	}
	for _, tc := range []struct{ pair, want string }{
		{"example.com/app", "want IMAGE=EXECUTABLE"},
		{"example.com/app=" + filepath.Join(dir, "missing"), "does not exist"},
		{"example.com/app=" + notExe, "is not executable"},
		{"ko://example.com/a=" + exe, "ko:// images run their package already"},
	} {
		if _, err := ParseImages([]string{tc.pair}, dir, dir); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseImages(%q) = %v, want an error saying %q", tc.pair, err, tc.want)
		}
	}
}

// TestResolveBuilds builds a ko:// package of this module once, and says why a
// package that does not exist does not build.
func TestResolveBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	im, err := ParseImages(nil, wd, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	builds := 0
	for range 2 {
		p, err := im.Resolve(context.Background(), "ko://github.com/ferry-serving/ferry/examples/hello", func(string) { builds++ })
		if err != nil {
			t.Fatal(err)
		}
		if info, err := os.Stat(p.Path); err != nil || info.Mode()&0o111 == 0 || p.Name != "hello" || !p.Ko {
			t.Fatalf("built %+v: %v", p, err)
		}
	}
	if builds != 1 {
		t.Errorf("%d builds for two pods of one package, want 1", builds)
	}
	_, err = im.Resolve(context.Background(), "ko://github.com/ferry-serving/ferry/examples/nothere", nil)
	if err == nil || !strings.Contains(err.Error(), "go build github.com/ferry-serving/ferry/examples/nothere") {
		t.Errorf("a package that does not exist: %v", err)
	}
}
