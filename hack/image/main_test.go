package main

import (
	"archive/tar"
	"bytes"
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestImage writes an image the way make image does, reads the tarball back as crane
// push does, and checks what a container runtime would run.
func TestImage(t *testing.T) {
	bin := []byte("#!/not/really/an/elf\n")
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := spec{component: "gateway", description: "d", arch: "arm64", version: "v1.2.3", revision: "abc", created: created}
	path := filepath.Join(t.TempDir(), "ferry-gateway.tar")
	layer, err := binaryLayer(bin, created)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(path, layer, s); err != nil {
		t.Fatal(err)
	}

	tag, _ := name.NewTag("ferry-gateway:v1.2.3")
	if _, err := tarball.ImageFromPath(path, &tag); err != nil {
		t.Errorf("the tarball has no image tagged %s: %v", tag, err)
	}
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != "arm64" {
		t.Errorf("platform %s/%s, want linux/arm64", cfg.OS, cfg.Architecture)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/ferry"}) || !slices.Equal(cfg.Config.Cmd, []string{"gateway"}) {
		t.Errorf("runs %q %q, want [/ferry] [gateway]", cfg.Config.Entrypoint, cfg.Config.Cmd)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", cfg.Config.User)
	}
	if !cfg.Created.Time.Equal(created) {
		t.Errorf("created %v, want %v", cfg.Created.Time, created)
	}
	for label, want := range map[string]string{
		"org.opencontainers.image.title":    "ferry-gateway",
		"org.opencontainers.image.version":  "v1.2.3",
		"org.opencontainers.image.revision": "abc",
		"org.opencontainers.image.created":  "2026-01-02T03:04:05Z",
	} {
		if got := cfg.Config.Labels[label]; got != want {
			t.Errorf("label %s = %q, want %q", label, got, want)
		}
	}

	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	if hdr.Name != "ferry" || hdr.Typeflag != tar.TypeReg || hdr.FileInfo().Mode().Perm() != 0o755 || hdr.Uid != 0 {
		t.Errorf("layer holds %s, type %c, mode %v, uid %d; want the file ferry, mode 0755, owned by root", hdr.Name, hdr.Typeflag, hdr.FileInfo().Mode(), hdr.Uid)
	}
	if !hdr.ModTime.Equal(created) {
		t.Errorf("file time %v, want %v", hdr.ModTime, created)
	}
	if got, _ := io.ReadAll(tr); !bytes.Equal(got, bin) {
		t.Errorf("file content %q, want %q", got, bin)
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("the layer holds more than the binary: %v", err)
	}
}

// TestReproducible: the same inputs give the same image digest, so a rebuild of a
// commit need not push anything.
func TestReproducible(t *testing.T) {
	s := spec{component: "controller", arch: "amd64", version: "v1", created: time.Unix(1700000000, 0)}
	digest := func() string {
		layer, err := binaryLayer([]byte("ferry"), s.created)
		if err != nil {
			t.Fatal(err)
		}
		img, err := image(layer, s)
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d.String()
	}
	if a, b := digest(), digest(); a != b {
		t.Errorf("two builds of one input: %s and %s", a, b)
	}
}
