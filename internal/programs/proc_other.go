//go:build !linux

package programs

import "syscall"

// processAttr puts a container's process in a process group of its own, so that a
// signal reaches what it started too. Outside Linux nothing kills it if ferry up dies
// without stopping it (kill -9): it is left running.
func processAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// dieWithParent: outside Linux a child cannot be made to die with its parent.
func dieWithParent() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// exited: outside Linux there are no runc containers to wait for.
func exited(int) bool { return true }
