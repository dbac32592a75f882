package programs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOCISpec(t *testing.T) {
	ko := Program{Path: "/cache/ab/helloworld", Name: "helloworld", Ko: true}
	exe := Program{Path: "/usr/local/bin/app", Name: "app"}
	pod := func(mod func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hello-00001-deployment-abc", Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "user-container", Image: "ko://example.com/hello",
				Env: []corev1.EnvVar{{Name: "PORT", Value: "8080"}, {Name: "K_REVISION", Value: "hello-00001"}}}}}}
		if mod != nil {
			mod(p)
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		program Program
		check   func(t *testing.T, s *specs.Spec)
	}{{
		name: "the image's entrypoint is the program at /ko-app; env is the container's with PATH",
		pod:  pod(nil), program: ko,
		check: func(t *testing.T, s *specs.Spec) {
			if !slices.Equal(s.Process.Args, []string{"/ko-app/helloworld"}) {
				t.Errorf("args %q", s.Process.Args)
			}
			for _, want := range []string{"PORT=8080", "K_REVISION=hello-00001", "HOSTNAME=hello-00001-deployment-abc", "PATH=" + defaultPath} {
				if !slices.Contains(s.Process.Env, want) {
					t.Errorf("env %q lacks %s", s.Process.Env, want)
				}
			}
			if !hasMount(s, "/cache/ab/helloworld", "/ko-app/helloworld", true) {
				t.Errorf("the program is not mounted read-only at /ko-app/helloworld: %+v", s.Mounts)
			}
			if s.Process.User.UID != koUser || s.Process.User.GID != koUser || len(s.Process.Capabilities.Effective) != 0 {
				t.Errorf("a ko image runs as %d:%d with %v, want ko's nonroot user without capabilities", s.Process.User.UID, s.Process.User.GID, s.Process.Capabilities.Effective)
			}
			if !s.Root.Readonly || s.Process.Cwd != "/" || s.Hostname != "hello-00001-deployment-abc" {
				t.Errorf("root %+v cwd %q hostname %q", s.Root, s.Process.Cwd, s.Hostname)
			}
		},
	}, {
		name: "command replaces the entrypoint, args follow, $(VAR) expands; workingDir",
		pod: pod(func(p *corev1.Pod) {
			c := &p.Spec.Containers[0]
			c.Command, c.Args, c.WorkingDir = []string{"/ko-app/helloworld"}, []string{"--port=$(PORT)", "$(UNSET)", "$$(PORT)"}, "/tmp"
		}), program: ko,
		check: func(t *testing.T, s *specs.Spec) {
			if want := []string{"/ko-app/helloworld", "--port=8080", "$(UNSET)", "$(PORT)"}; !slices.Equal(s.Process.Args, want) {
				t.Errorf("args %q, want %q", s.Process.Args, want)
			}
			if s.Process.Cwd != "/tmp" {
				t.Errorf("cwd %q", s.Process.Cwd)
			}
		},
	}, {
		name: "a mapped executable runs as root; runAsUser of the container over the pod's",
		pod: pod(func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr(int64(1000)), RunAsGroup: ptr(int64(1000))}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr(int64(2020))}
		}), program: exe,
		check: func(t *testing.T, s *specs.Spec) {
			if s.Process.User.UID != 2020 || s.Process.User.GID != 1000 {
				t.Errorf("user %d:%d, want 2020:1000", s.Process.User.UID, s.Process.User.GID)
			}
		},
	}, {
		name: "limits become cgroup settings: memory, a CPU quota per 100 ms, shares from the request",
		pod: pod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi"), corev1.ResourceCPU: resource.MustParse("500m")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
			}
		}), program: exe,
		check: func(t *testing.T, s *specs.Spec) {
			r := s.Linux.Resources
			if r.Memory == nil || *r.Memory.Limit != 128<<20 {
				t.Errorf("memory %+v", r.Memory)
			}
			if r.CPU == nil || *r.CPU.Quota != 50000 || *r.CPU.Period != 100000 || *r.CPU.Shares != 256 {
				t.Errorf("cpu %+v", r.CPU)
			}
		},
	}, {
		name: "no limits, no cgroup settings; cgroups read-only, the pod's network namespace",
		pod:  pod(nil), program: exe,
		check: func(t *testing.T, s *specs.Spec) {
			if s.Linux.Resources.Memory != nil || s.Linux.Resources.CPU != nil {
				t.Errorf("resources %+v", s.Linux.Resources)
			}
			var cgroup, netns bool
			for _, m := range s.Mounts {
				cgroup = cgroup || m.Destination == "/sys/fs/cgroup" && slices.Contains(m.Options, "ro")
			}
			for _, ns := range s.Linux.Namespaces {
				netns = netns || ns.Type == specs.NetworkNamespace && ns.Path == "/var/run/netns/fpx-1"
			}
			if !cgroup || !netns {
				t.Errorf("cgroup ro %v, pod netns %v", cgroup, netns)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := ociSpec(containerConfig{pod: tc.pod, container: &tc.pod.Spec.Containers[0], program: tc.program,
				env:    resolvedEnv(t, tc.pod, &tc.pod.Spec.Containers[0]),
				rootfs: "/b/rootfs", netns: "/var/run/netns/fpx-1", cgroupPath: "/fp/x",
				mounts: []mount{{source: "/pods/x/volumes/data", destination: "/data"}}})
			if !hasMount(s, "/pods/x/volumes/data", "/data", false) {
				t.Errorf("the volume is not mounted writable at /data: %+v", s.Mounts)
			}
			tc.check(t, s)
		})
	}
}

func hasMount(s *specs.Spec, source, destination string, readOnly bool) bool {
	for _, m := range s.Mounts {
		if m.Source == source && m.Destination == destination && slices.Contains(m.Options, "ro") == readOnly {
			return true
		}
	}
	return false
}

func TestContainerMounts(t *testing.T) {
	p := t.TempDir()
	vols := map[string]mount{"cm": {source: p + "/volumes/cm", readOnly: true}, "scratch": {source: p + "/volumes/scratch"}}
	ctr := &corev1.Container{VolumeMounts: []corev1.VolumeMount{
		{Name: "cm", MountPath: "/hello/cm"},
		{Name: "scratch", MountPath: "/data", ReadOnly: true},
		{Name: "scratch", MountPath: "/etc/one", SubPath: "sub"},
	}}
	got, err := containerMounts(ctr, p, vols)
	if err != nil {
		t.Fatal(err)
	}
	want := []mount{
		{p + "/etc/hosts", "/etc/hosts", false}, {p + "/etc/hostname", "/etc/hostname", false}, {p + "/etc/resolv.conf", "/etc/resolv.conf", false},
		{p + "/volumes/cm", "/hello/cm", true}, {p + "/volumes/scratch", "/data", true}, {p + "/volumes/scratch/sub", "/etc/one", false},
	}
	if !slices.Equal(got, want) {
		t.Errorf("mounts\n got %+v\nwant %+v", got, want)
	}
	for _, bad := range []corev1.VolumeMount{{Name: "missing", MountPath: "/x"}, {Name: "cm", MountPath: "/x", SubPath: "../etc"}} {
		if _, err := containerMounts(&corev1.Container{VolumeMounts: []corev1.VolumeMount{bad}}, p, vols); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// TestRootfsTmpfsMode: runc gives a tmpfs the mode of its mount point, so the root
// must have /tmp at 1777 for the container's /tmp to be writable by any user.
func TestRootfsTmpfsMode(t *testing.T) {
	s := &specs.Spec{Root: &specs.Root{Path: t.TempDir()}, Mounts: systemMounts()}
	if err := makeRootfs(s); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]os.FileMode{"/tmp": 0o777 | os.ModeSticky, "/dev/shm": 0o777 | os.ModeSticky, "/dev": 0o755, "/proc": 0o755} {
		info, err := os.Stat(filepath.Join(s.Root.Path, dir))
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode() &^ os.ModeDir; got != want {
			t.Errorf("%s: mode %v, want %v", dir, got, want)
		}
	}
}
