package programs

import (
	"bytes"
	"context"
	"io"
	"os"
	"sync"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-client/pkg/logs"
)

// A container's stdout and stderr go to one file in the CRI log format that a kubelet
// reads (`<RFC 3339 time> <stream> <F|P> <text>`), so that the kubelet's own reader,
// k8s.io/cri-client/pkg/logs, serves kubectl logs with tail, since, timestamps and
// follow.

// logFile is the log of one run of a container.
type logFile struct {
	mu   sync.Mutex
	f    *os.File
	path string
}

func createLog(path string) (*logFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	return &logFile{f: f, path: path}, nil
}

// maxLine is the longest line written as one entry; a longer one is split into partial
// entries, as containerd does.
const maxLine = 16 << 10

// stream is an io.Writer for one of the container's streams.
func (l *logFile) stream(name string) *streamWriter { return &streamWriter{log: l, name: name} }

func (l *logFile) write(stream string, partial bool, line []byte) {
	tag := "F"
	if partial {
		tag = "P"
	}
	var b bytes.Buffer
	b.Grow(len(line) + 48)
	b.WriteString(time.Now().UTC().Format(time.RFC3339Nano))
	b.WriteByte(' ')
	b.WriteString(stream)
	b.WriteByte(' ')
	b.WriteString(tag)
	b.WriteByte(' ')
	b.Write(line)
	b.WriteByte('\n')
	l.mu.Lock()
	_, _ = l.f.Write(b.Bytes())
	l.mu.Unlock()
}

func (l *logFile) close() error { return l.f.Close() }

// streamWriter cuts a stream into lines.
type streamWriter struct {
	log     *logFile
	name    string
	pending []byte
}

func (w *streamWriter) Write(p []byte) (int, error) {
	w.pending = append(w.pending, p...)
	for {
		i := bytes.IndexByte(w.pending, '\n')
		if i < 0 {
			break
		}
		w.log.write(w.name, false, w.pending[:i])
		w.pending = w.pending[i+1:]
	}
	for len(w.pending) > maxLine {
		w.log.write(w.name, true, w.pending[:maxLine])
		w.pending = w.pending[maxLine:]
	}
	w.pending = bytes.Clone(w.pending)
	return len(p), nil
}

// flush writes a last line without its newline.
func (w *streamWriter) flush() {
	if len(w.pending) > 0 {
		w.log.write(w.name, false, w.pending)
		w.pending = nil
	}
}

// readLogs writes a container run's log to out as kubectl logs asks for it. running
// tells a follower when the run has ended.
func readLogs(ctx context.Context, path string, opts *logs.LogOptions, running func() bool, out io.Writer) error {
	return logs.ReadLogs(ctx, path, path, opts, runState{running: running}, out, out)
}

// runState answers the one question the log reader asks a container runtime while it
// follows a log: is the container still running. The reader takes the whole CRI
// runtime interface; it calls nothing else of it, which stays nil.
type runState struct {
	internalapi.RuntimeService
	running func() bool
}

func (r runState) ContainerStatus(context.Context, string, bool) (*runtimeapi.ContainerStatusResponse, error) {
	state := runtimeapi.ContainerState_CONTAINER_EXITED
	if r.running() {
		state = runtimeapi.ContainerState_CONTAINER_RUNNING
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{State: state}}, nil
}
