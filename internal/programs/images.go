package programs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sync/singleflight"
)

// KoPrefix marks an image that names a Go package, as ko's users write it.
const KoPrefix = "ko://"

// Program is what a container's image runs: an executable on this machine, mounted in
// the container at /ko-app/<Name>, where ko puts a package's binary.
type Program struct {
	// Path is the executable on the host.
	Path string
	// Name is its name under /ko-app.
	Name string
	// Ko says it was built from a ko:// package, whose images run as ko's default
	// base image does: as user 65532 (distroless' nonroot).
	Ko bool
}

// InContainer is where the program is in its container.
func (p Program) InContainer() string { return "/ko-app/" + p.Name }

// Images maps container images to programs: the images given with --local-image,
// and every ko:// image, whose package the go command builds once per import path.
type Images struct {
	mapped map[string]string
	// buildDir is the directory the go command runs in (ferry up's), cacheDir where
	// built programs are kept.
	buildDir, cacheDir string

	builds singleflight.Group
	mu     sync.Mutex
	built  map[string]Program
}

// ParseImages reads IMAGE=EXECUTABLE pairs, as --local-image takes them. EXECUTABLE is a
// path (made absolute against buildDir) or a ko:// import path.
func ParseImages(pairs []string, buildDir, cacheDir string) (*Images, error) {
	im := &Images{mapped: map[string]string{}, buildDir: buildDir, cacheDir: cacheDir, built: map[string]Program{}}
	for _, pair := range pairs {
		image, program, ok := strings.Cut(pair, "=")
		if !ok || image == "" || program == "" {
			return nil, fmt.Errorf("--local-image %q: want IMAGE=EXECUTABLE or IMAGE=ko://IMPORT/PATH", pair)
		}
		if strings.HasPrefix(image, KoPrefix) {
			return nil, fmt.Errorf("--local-image %q: ko:// images run their package already; map another image name to it", pair)
		}
		if !strings.HasPrefix(program, KoPrefix) {
			if !filepath.IsAbs(program) {
				program = filepath.Join(buildDir, program)
			}
			if err := checkExecutable(program); err != nil {
				return nil, fmt.Errorf("--local-image %q: %w", pair, err)
			}
		}
		im.mapped[image] = program
	}
	return im, nil
}

// Runs says whether image runs as a local program: it was mapped, or is ko://. Pure and
// cheap: the scheduler asks it for every pod.
func (im *Images) Runs(image string) bool {
	if im == nil {
		return false
	}
	_, ok := im.mapped[image]
	return ok || strings.HasPrefix(image, KoPrefix)
}

// Resolve returns the program an image runs, building a ko:// package first if it has
// not been built in this run. building is called before a build starts.
func (im *Images) Resolve(ctx context.Context, image string, building func(importPath string)) (Program, error) {
	target, ok := im.mapped[image]
	if !ok {
		target = image
	}
	if !strings.HasPrefix(target, KoPrefix) {
		if err := checkExecutable(target); err != nil {
			return Program{}, err
		}
		return Program{Path: target, Name: filepath.Base(target)}, nil
	}
	importPath := strings.TrimPrefix(target, KoPrefix)
	im.mu.Lock()
	p, ok := im.built[importPath]
	im.mu.Unlock()
	if ok {
		return p, nil
	}
	if building != nil {
		building(importPath)
	}
	v, err, _ := im.builds.Do(importPath, func() (any, error) {
		p, err := im.build(ctx, importPath)
		if err == nil {
			im.mu.Lock()
			im.built[importPath] = p
			im.mu.Unlock()
		}
		return p, err
	})
	if err != nil {
		return Program{}, err
	}
	return v.(Program), nil
}

// build runs `go build` for a package, as ko does (static, trimmed paths), from the
// directory ferry up was started in, so that the package resolves in that module. The
// go command's own cache makes a rebuild of an unchanged package quick.
func (im *Images) build(ctx context.Context, importPath string) (Program, error) {
	sum := sha256.Sum256([]byte(importPath))
	name := path.Base(importPath)
	out := filepath.Join(im.cacheDir, hex.EncodeToString(sum[:8]), name)
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return Program{}, fmt.Errorf("building %s needs the go command on ferry up's PATH (sudo resets PATH: sudo env PATH=\"$PATH\" ferry up): %w", importPath, err)
	}
	cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-o", out, importPath)
	cmd.Dir = im.buildDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return Program{}, fmt.Errorf("go build %s (in %s): %s", importPath, im.buildDir, msg)
	}
	return Program{Path: out, Name: name, Ko: true}, nil
}

// checkExecutable says why path cannot be run, if it cannot.
func checkExecutable(path string) error {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("executable %s does not exist", path)
	case err != nil:
		return err
	case info.IsDir():
		return fmt.Errorf("executable %s is a directory", path)
	case info.Mode()&0o111 == 0:
		return fmt.Errorf("%s is not executable (mode %v)", path, info.Mode().Perm())
	}
	return nil
}
