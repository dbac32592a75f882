//go:build !linux

package programs

import (
	"errors"
	"net/netip"
)

// Pods get network namespaces on Linux alone; elsewhere they run as processes.

func joinNode(string, netip.Addr, netip.Addr, string) error { return errors.ErrUnsupported }

func deleteNamespace(string) error { return errors.ErrUnsupported }
