// Command image writes Ferry's container images, ferry-controller and ferry-gateway, as
// tarballs that `crane push` uploads (make image; docs/install.md). Both hold one
// file, a static ferry binary built without the local cluster, on an empty base; they
// differ in their default command. Everything in them, timestamps included, comes from
// the flags, so the same commit gives the same image digests.
//
// It uses go-containerregistry, not ko. ko runs `go build` itself and pulls a base
// image from a registry by default; here the binary must be built like `make build`
// plus a build tag, there is no registry to pull from, and the two images share one
// binary and differ in their command. Each is configuration around ko, while with
// go-containerregistry (the library under ko and crane, already in Ferry's module
// graph, without ko's signing and SBOM dependencies) the whole image is one appended
// layer. No Docker daemon and no registry are needed to build.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// binaryPath is where the binary is in the images, and their entrypoint.
const binaryPath = "/ferry"

// nonRoot is the user and group the images run as (distroless's nonroot): numeric, so
// that the kubelet can check runAsNonRoot (Pod Security's restricted profile) without
// an /etc/passwd.
const nonRoot = "65532:65532"

// components are ferry's commands that run in a cluster, each in its own image
// ferry-<component> (config/deploy names them so).
var components = []struct{ name, description string }{
	{"controller", "Ferry's Knative Serving reconcilers and admission webhooks"},
	{"gateway", "Ferry's gateway: serves Knative Ingresses over HTTP"},
}

// spec is what makes one image.
type spec struct {
	component   string
	description string
	arch        string
	version     string // the image tag and OCI version label
	revision    string // the commit
	created     time.Time
}

func main() {
	binary := flag.String("binary", "", "the static linux ferry binary to put in the images")
	out := flag.String("out", "bin/images", "the directory of the tarballs ferry-<component>.tar")
	var s spec
	flag.StringVar(&s.arch, "arch", "amd64", "the binary's GOARCH")
	flag.StringVar(&s.version, "version", "dev", "the images' tag and version label")
	flag.StringVar(&s.revision, "revision", "", "the commit, for the revision label")
	created := flag.Int64("created", 0, "the images' and their file's time, in seconds since 1970 (make passes the commit's)")
	flag.Parse()
	s.created = time.Unix(*created, 0).UTC()
	log.SetFlags(0)
	if *binary == "" || flag.NArg() > 0 {
		log.Fatal("usage: image -binary FILE [-out DIR -arch ARCH -version V -revision SHA -created UNIX]")
	}
	bin, err := os.ReadFile(*binary)
	if err != nil {
		log.Fatal(err)
	}
	layer, err := binaryLayer(bin, s.created)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	for _, c := range components {
		s.component, s.description = c.name, c.description
		if err := write(filepath.Join(*out, "ferry-"+c.name+".tar"), layer, s); err != nil {
			log.Fatalf("ferry-%s: %v", c.name, err)
		}
	}
}

// write builds the image s and writes it as a tarball with the tag ferry-<component>:<version>,
// which `docker load` uses; `crane push FILE REF` pushes it under any name.
func write(path string, layer v1.Layer, s spec) error {
	img, err := image(layer, s)
	if err != nil {
		return err
	}
	tag, err := name.NewTag("ferry-" + s.component + ":" + s.version)
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s: %s %s\n", path, tag, digest)
	return nil
}

// binaryLayer is a layer that holds bin at binaryPath, owned by root and executable
// but not writable by the images' user.
func binaryLayer(bin []byte, modTime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     binaryPath[1:],
		Mode:     0o755,
		Size:     int64(len(bin)),
		ModTime:  modTime,
		Format:   tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
}

// image is the empty image plus layer, run as nonRoot with ferry <component> by default.
func image(layer v1.Layer, s spec) (v1.Image, error) {
	base, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
		Architecture: s.arch,
		OS:           "linux",
		Created:      v1.Time{Time: s.created},
		Config: v1.Config{
			Entrypoint: []string{binaryPath},
			Cmd:        []string{s.component},
			User:       nonRoot,
			Labels: map[string]string{
				"org.opencontainers.image.title":       "ferry-" + s.component,
				"org.opencontainers.image.description": s.description,
				"org.opencontainers.image.source":      "https://github.com/ferry-serving/ferry",
				"org.opencontainers.image.version":     s.version,
				"org.opencontainers.image.revision":    s.revision,
				"org.opencontainers.image.created":     s.created.Format(time.RFC3339),
			},
		},
	})
	if err != nil {
		return nil, err
	}
	return mutate.Append(base, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: s.created}, CreatedBy: "hack/image: " + binaryPath},
	})
}
