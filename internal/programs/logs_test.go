package programs

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cri-client/pkg/logs"
)

// TestLogRoundTrip writes a container's streams as the node does and reads them back
// with the kubelet's reader, as kubectl logs gets them.
func TestLogRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	lf, err := createLog(path)
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr := lf.stream("stdout"), lf.stream("stderr")
	stdout.Write([]byte("listening on :8080\nGET / fr"))
	stderr.Write([]byte("warning: slow\n"))
	stdout.Write([]byte("om 10.0.0.1\n"))
	long := strings.Repeat("x", maxLine+10)
	stdout.Write([]byte(long + "\nno newline at exit"))
	stdout.flush()
	lf.close()

	read := func(opts *logs.LogOptions) string {
		var b bytes.Buffer
		if err := readLogs(context.Background(), path, opts, func() bool { return false }, &b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	want := "listening on :8080\nwarning: slow\nGET / from 10.0.0.1\n" + long + "\nno newline at exit\n"
	if got := read(&logs.LogOptions{}); got != want {
		t.Errorf("logs:\n%.200q\nwant\n%.200q", got, want)
	}
	two := int64(2)
	if got := read(&logs.LogOptions{TailLines: &two}); got != long+"\nno newline at exit\n" {
		t.Errorf("the last two lines: %.100q", got)
	}
	if got := lastLines(path); !strings.HasSuffix(got, "xx\nno newline at exit") || len(got) > 2048 {
		t.Errorf("termination message %d bytes: ...%q", len(got), got[max(0, len(got)-40):])
	}
}
