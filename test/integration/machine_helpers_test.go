package integration

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Some tests need more of the machine than Go: runc containers for programs, or a
// browser. Each calls needIsolation or browser, which skips it naming what is missing
// and the command that installs it, or fails it when requireAllEnv (or, for the browser,
// requireBrowserEnv) is set: CI sets it (.ci/run), so that nothing passes there by
// skipping. hack/test.sh lists each such skip at its end, from skippedFileEnv's file:
// go test without -v prints no skip messages.
const (
	requireAllEnv     = "FERRY_REQUIRE_ALL"
	requireBrowserEnv = "FERRY_REQUIRE_BROWSER"
	skippedFileEnv    = "FERRY_SKIPPED_FILE"
)

// needIsolation skips (or fails) t unless ferry up's program node can run pods in runc
// containers, each in a network namespace of its own with kube-proxy's nftables rules:
// Linux, root, and Debian's runc, iproute2 (ip) and nftables (nft).
func needIsolation(t *testing.T) {
	t.Helper()
	var missing, packages []string
	if runtime.GOOS != "linux" {
		missing = append(missing, "Linux")
	}
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	for _, c := range []struct{ command, pkg string }{{"runc", "runc"}, {"ip", "iproute2"}, {"nft", "nftables"}} {
		if _, err := exec.LookPath(c.command); err != nil {
			missing = append(missing, c.command)
			packages = append(packages, c.pkg)
		}
	}
	need(t, "isolated programs", requireAllEnv, missing, packages)
}

// browser is headless Chromium's path, or skips (or fails) t without one.
func browser(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	need(t, "the browser tests", requireBrowserEnv, []string{"chromium"}, []string{"chromium"})
	return ""
}

// need skips t when something is missing, saying what, and records the skip for
// hack/test.sh's summary; it fails t instead when requireAllEnv or requireAlso is set.
func need(t *testing.T, what, requireAlso string, missing, packages []string) {
	t.Helper()
	if len(missing) == 0 {
		return
	}
	why := fmt.Sprintf("%s need %s", what, strings.Join(missing, ", "))
	if len(packages) > 0 {
		why += fmt.Sprintf(" (apt-get install -y %s)", strings.Join(packages, " "))
	}
	for _, env := range []string{requireAllEnv, requireAlso} {
		if required, _ := strconv.ParseBool(os.Getenv(env)); required {
			t.Fatalf("%s, and %s is set", why, env)
		}
	}
	recordSkip(t, t.Name()+": "+why)
	t.Skip(why)
}

var skippedFileMu sync.Mutex

// recordSkip appends line to the file skippedFileEnv names, if it names one.
func recordSkip(t *testing.T, line string) {
	path := os.Getenv(skippedFileEnv)
	if path == "" {
		return
	}
	skippedFileMu.Lock()
	defer skippedFileMu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		_, err = fmt.Fprintln(f, line)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Fatalf("recording the skip in %s: %v", path, err)
	}
}
