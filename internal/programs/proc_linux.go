package programs

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// processAttr puts a container's process in a process group of its own, so that a
// signal reaches what it started too, and kills it when ferry up dies (what it started
// itself is not killed then).
func processAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// dieWithParent makes a child die with ferry up.
func dieWithParent() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }

// exited says whether the child pid has exited, leaving it to be waited for.
func exited(pid int) bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err != nil || info.Signo != 0
}
