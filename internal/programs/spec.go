package programs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/third_party/forked/golang/expansion"
)

// mount is a directory or file of the host that a container sees at a path of its own.
type mount struct {
	source, destination string
	readOnly            bool
}

// containerConfig is everything a container's OCI spec is made from.
type containerConfig struct {
	pod       *corev1.Pod
	container *corev1.Container
	program   Program
	// env is the container's environment, resolved (env.go).
	env        map[string]string
	rootfs     string
	netns      string
	cgroupPath string
	// mounts are the pod's files (/etc/hosts, resolv.conf, hostname) and its volumes.
	mounts []mount
}

// hostDirs are the host's directories every container sees read-only, so that a
// dynamically linked program finds its libraries, and a script its interpreter.
var hostDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/ssl", "/etc/ca-certificates", "/etc/alternatives"}

// hostFiles are host files that programs commonly read, seen read-only.
var hostFiles = []string{"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/localtime"}

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// koUser is the user of ko's default base image (distroless static, nonroot).
const koUser = 65532

// ociSpec is a container's OCI runtime spec, as a kubelet with runc would make it: its
// own mount, PID, IPC and UTS namespaces and the pod's network namespace, a read-only
// root that holds only the host's system directories, the program at /ko-app/<name>,
// a private /dev and a writable /tmp, the user and the memory and CPU limits of its
// spec, and cgroups mounted read-only.
func ociSpec(c containerConfig) *specs.Spec {
	ctr := c.container
	env := c.env
	uid, gid := user(c.pod, ctr, c.program)
	s := &specs.Spec{
		Version:  specs.Version,
		Hostname: c.pod.Name,
		Root:     &specs.Root{Path: c.rootfs, Readonly: true},
		Process: &specs.Process{
			User:            specs.User{UID: uint32(uid), GID: uint32(gid)},
			Args:            argv(ctr, c.program, env),
			Env:             envList(env),
			Cwd:             cwd(ctr),
			NoNewPrivileges: true,
			Capabilities:    capabilities(uid),
			Rlimits:         []specs.POSIXRlimit{openFiles()},
		},
		Mounts: systemMounts(),
		Linux: &specs.Linux{
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace},
				{Type: specs.MountNamespace}, {Type: specs.NetworkNamespace, Path: c.netns},
			},
			CgroupsPath: c.cgroupPath,
			Resources:   resources(ctr),
			MaskedPaths: []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
				"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi"},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
	for _, d := range hostDirs {
		if info, err := os.Stat(d); err == nil && info.IsDir() {
			s.Mounts = append(s.Mounts, bind(d, d, true))
		}
	}
	for _, f := range hostFiles {
		if info, err := os.Stat(f); err == nil && info.Mode().IsRegular() {
			s.Mounts = append(s.Mounts, bind(f, f, true))
		}
	}
	s.Mounts = append(s.Mounts, bind(c.program.Path, c.program.InContainer(), true))
	for _, m := range c.mounts {
		s.Mounts = append(s.Mounts, bind(m.source, m.destination, m.readOnly))
	}
	return s
}

// systemMounts are runc's defaults (`runc spec`), with /sys/fs/cgroup read-only as the
// runtime contract asks and /tmp writable by anyone.
func systemMounts() []specs.Mount {
	return []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc"},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"nosuid", "noexec", "nodev", "relatime", "ro"}},
		{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777"}},
	}
}

func bind(source, destination string, readOnly bool) specs.Mount {
	opts := []string{"rbind", "rprivate"}
	if readOnly {
		opts = append(opts, "ro")
	}
	return specs.Mount{Destination: destination, Type: "bind", Source: source, Options: opts}
}

func envList(env map[string]string) []string {
	list := make([]string, 0, len(env))
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	slices.Sort(list)
	return list
}

// argv is command and args with $(VAR) expanded, as the kubelet does; without a
// command, the image's entrypoint is the program.
func argv(ctr *corev1.Container, p Program, env map[string]string) []string {
	mapping := expansion.MappingFuncFor(env)
	var args []string
	if len(ctr.Command) == 0 {
		args = append(args, p.InContainer())
	}
	for _, a := range append(slices.Clone(ctr.Command), ctr.Args...) {
		args = append(args, expansion.Expand(a, mapping))
	}
	return args
}

func cwd(ctr *corev1.Container) string {
	if ctr.WorkingDir != "" {
		return ctr.WorkingDir
	}
	return "/"
}

// user is the container's runAsUser and runAsGroup (the container's over the pod's),
// else the image's: ko's nonroot user for a package, root for a mapped executable, as a
// Docker image without USER runs.
func user(pod *corev1.Pod, ctr *corev1.Container, p Program) (uid, gid int64) {
	if p.Ko {
		uid, gid = koUser, koUser
	}
	var runAsUser, runAsGroup *int64
	if sc := pod.Spec.SecurityContext; sc != nil {
		runAsUser, runAsGroup = sc.RunAsUser, sc.RunAsGroup
	}
	if sc := ctr.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			runAsUser = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			runAsGroup = sc.RunAsGroup
		}
	}
	if runAsUser != nil {
		uid = *runAsUser
		if runAsGroup == nil {
			gid = 0
		}
	}
	if runAsGroup != nil {
		gid = *runAsGroup
	}
	return uid, gid
}

// capabilities are runc's default set, which a container of the default Docker
// profile also has; a non-root user's effective set is empty.
func capabilities(uid int64) *specs.LinuxCapabilities {
	caps := []string{"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE", "CAP_CHOWN", "CAP_DAC_OVERRIDE",
		"CAP_FOWNER", "CAP_FSETID", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_NET_RAW", "CAP_SYS_CHROOT", "CAP_MKNOD", "CAP_SETFCAP"}
	c := &specs.LinuxCapabilities{Bounding: caps}
	if uid == 0 {
		c.Effective, c.Permitted = caps, caps
	}
	return c
}

// resources are the container's limits as cgroup settings: memory.limit, and CPU as a
// quota per 100 ms period; its CPU request as shares, as the kubelet sets them.
func resources(ctr *corev1.Container) *specs.LinuxResources {
	r := &specs.LinuxResources{}
	if m, ok := ctr.Resources.Limits[corev1.ResourceMemory]; ok {
		r.Memory = &specs.LinuxMemory{Limit: ptr(m.Value())}
	}
	cpu := &specs.LinuxCPU{}
	if c, ok := ctr.Resources.Limits[corev1.ResourceCPU]; ok {
		cpu.Period = ptr(uint64(100000))
		cpu.Quota = ptr(max(c.MilliValue()*100, 1000))
	}
	if c, ok := ctr.Resources.Requests[corev1.ResourceCPU]; ok {
		cpu.Shares = ptr(uint64(max(c.MilliValue()*1024/1000, 2)))
	}
	if cpu.Period != nil || cpu.Shares != nil {
		r.CPU = cpu
	}
	return r
}

// mountPoints lists the paths a read-only root must hold for s's mounts: runc mounts
// onto them but cannot make them in a read-only root.
func mountPoints(s *specs.Spec) (dirs, files []string) {
	for _, m := range s.Mounts {
		if m.Type == "bind" {
			if info, err := os.Stat(m.Source); err == nil && !info.IsDir() {
				files = append(files, m.Destination)
				continue
			}
		}
		dirs = append(dirs, m.Destination)
	}
	return dirs, files
}

// makeRootfs makes a container's empty read-only root, with the mount points of s.
// A tmpfs mount point gets its mount's mode: runc gives a tmpfs the mode of the
// directory it covers, whatever its mode= option says (/tmp must be 1777).
func makeRootfs(s *specs.Spec) error {
	dirs, files := mountPoints(s)
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(s.Root.Path, d), 0o755); err != nil {
			return err
		}
	}
	for _, m := range s.Mounts {
		if m.Type != "tmpfs" {
			continue
		}
		for _, o := range m.Options {
			if v, ok := strings.CutPrefix(o, "mode="); ok {
				mode, err := strconv.ParseUint(v, 8, 32)
				if err != nil {
					return fmt.Errorf("mount %s: %s: %w", m.Destination, o, err)
				}
				perm := os.FileMode(mode).Perm()
				if mode&0o1000 != 0 {
					perm |= os.ModeSticky
				}
				if err := os.Chmod(filepath.Join(s.Root.Path, m.Destination), perm); err != nil {
					return err
				}
			}
		}
	}
	for _, f := range files {
		p := filepath.Join(s.Root.Path, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil && !os.IsExist(err) {
			return err
		}
	}
	return nil
}

// openFiles is the open-file limit of a container: this process's hard limit, the
// most it may give (Docker's 1048576 where the machine allows it).
func openFiles() specs.POSIXRlimit {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		l.Max = 1024
	}
	return specs.POSIXRlimit{Type: "RLIMIT_NOFILE", Hard: l.Max, Soft: l.Max}
}

func ptr[T any](v T) *T { return &v }
