package http1

import (
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// bufferBeforeCommit is how much body the response holds before its headers go out,
// as net/http's bufferBeforeChunkingSize: a handler that ends within it gets a
// Content-Length, and its start is what the Content-Type is sniffed from.
const bufferBeforeCommit = 2048

// response is the lean loop's http.ResponseWriter. It answers as net/http's server
// does (server.go's chunkWriter.writeHeader and finishRequest, Go 1.26): Date,
// Content-Type sniffed when unset, Content-Length when the handler ends within the
// first 2 KiB, chunked otherwise, trailers, Connection: close when the request or
// the handler asked for it or the server is shutting down, and no body for HEAD,
// 1xx, 204 and 304.
type response struct {
	c             *conn
	req           *http.Request
	header        http.Header
	status        int
	wroteHeader   bool // the status is set
	committed     bool // the headers are written
	chunked       bool
	handlerDone   bool
	closeAfter    bool
	contentLength int64 // declared or computed; -1: unknown
	written       int64
	pending       []byte // body held until the headers go out
	trailers      []string
}

func (w *response) Header() http.Header { return w.header }

func (w *response) WriteHeader(code int) {
	if w.wroteHeader {
		return
	}
	if code < 100 || code > 999 {
		panic("invalid WriteHeader code " + strconv.Itoa(code))
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		// Informational: out at once, the final answer still to come.
		w.writeStatusLine(code)
		w.writeHeaderFields(nil)
		w.c.bw.WriteString("\r\n")
		w.c.bw.Flush()
		return
	}
	w.wroteHeader, w.status = true, code
	if cl := w.header.Get("Content-Length"); cl != "" {
		if v, err := strconv.ParseInt(cl, 10, 64); err == nil && v >= 0 {
			w.contentLength = v
		} else {
			w.header.Del("Content-Length")
		}
	}
}

func (w *response) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	w.written += int64(len(p))
	if w.contentLength != -1 && w.written > w.contentLength {
		return 0, http.ErrContentLength
	}
	if !w.committed {
		if len(w.pending)+len(p) <= bufferBeforeCommit {
			w.pending = append(w.pending, p...)
			return len(p), nil
		}
		if err := w.commit(p); err != nil {
			return 0, err
		}
	}
	return w.writeBody(p)
}

// Flush sends the headers and what the body has so far.
func (w *response) Flush() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(nil)
	}
	w.c.bw.Flush()
}

// finish ends the response once the handler returned, and flushes it.
func (w *response) finish() error {
	w.handlerDone = true
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		if err := w.commit(nil); err != nil {
			return err
		}
	}
	bw := w.c.bw
	if w.chunked {
		bw.WriteString("0\r\n")
		w.writeTrailers()
		bw.WriteString("\r\n")
	}
	if w.req.Method != http.MethodHead && w.contentLength != -1 && bodyAllowed(w.status) && w.written != w.contentLength {
		// Short of what it declared: the client can only tell by the close.
		w.closeAfter = true
	}
	return bw.Flush()
}

// commit writes the status line and headers, then the held body; next is the
// write that does not fit with it, to sniff from when nothing is held.
func (w *response) commit(next []byte) error {
	w.committed = true
	h, p := w.header, w.pending
	sniff := p
	if len(sniff) == 0 {
		sniff = next
	}
	isHead := w.req.Method == http.MethodHead
	for _, v := range h["Trailer"] {
		for _, k := range strings.Split(v, ",") {
			switch k = textproto.CanonicalMIMEHeaderKey(textproto.TrimString(k)); k {
			case "", "Transfer-Encoding", "Trailer", "Content-Length":
			default:
				w.trailers = append(w.trailers, k)
			}
		}
	}
	hasTrailers := len(w.trailers) > 0
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			hasTrailers = true
		}
	}
	te, hasTE := h["Transfer-Encoding"], false
	if len(te) > 0 {
		hasTE = true
	}
	var setLength, setType string
	if w.handlerDone && !hasTrailers && !hasTE && bodyAllowed(w.status) && w.contentLength == -1 && (!isHead || len(p) > 0) {
		w.contentLength = int64(len(p))
		setLength = strconv.Itoa(len(p))
	}
	if httpguts.HeaderValuesContainsToken(h["Connection"], "close") {
		w.closeAfter = true
	}
	if w.c.s.closing.Load() {
		w.closeAfter = true
	}
	if bodyAllowed(w.status) {
		if _, haveType := h["Content-Type"]; !haveType && !hasTE && h.Get("Content-Encoding") == "" && len(sniff) > 0 {
			setType = http.DetectContentType(sniff)
		}
	}
	setChunked := false
	switch {
	case isHead || !bodyAllowed(w.status):
	case w.contentLength != -1:
		delete(h, "Transfer-Encoding")
	case hasTE && te[0] == "identity":
		// Delimited by the close (server-sent events, as net/http allows).
		w.closeAfter = true
		delete(h, "Transfer-Encoding")
	default:
		w.chunked, setChunked = true, true
		delete(h, "Transfer-Encoding")
	}
	if w.closeAfter && !httpguts.HeaderValuesContainsToken(h["Connection"], "close") {
		delete(h, "Connection")
	}
	w.writeStatusLine(w.status)
	w.writeHeaderFields(h)
	bw := w.c.bw
	if setLength != "" {
		bw.WriteString("Content-Length: " + setLength + "\r\n")
	}
	if setType != "" {
		bw.WriteString("Content-Type: " + setType + "\r\n")
	}
	if w.closeAfter && h["Connection"] == nil {
		bw.WriteString("Connection: close\r\n")
	}
	if setChunked {
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	if _, ok := h["Date"]; !ok {
		bw.WriteString("Date: ")
		bw.Write(w.c.s.date.get(time.Now()))
		bw.WriteString("\r\n")
	}
	bw.WriteString("\r\n")
	if len(p) > 0 {
		w.pending = p[:0]
		_, err := w.writeBody(p)
		return err
	}
	return nil
}

func (w *response) writeBody(p []byte) (int, error) {
	if w.req.Method == http.MethodHead {
		return len(p), nil
	}
	bw := w.c.bw
	if w.chunked {
		bw.WriteString(strconv.FormatInt(int64(len(p)), 16))
		bw.WriteString("\r\n")
		n, err := bw.Write(p)
		if err == nil {
			_, err = bw.WriteString("\r\n")
		}
		return n, err
	}
	return bw.Write(p)
}

func (w *response) writeStatusLine(code int) {
	bw := w.c.bw
	bw.WriteString("HTTP/1.1 ")
	bw.Write(strconv.AppendInt(bw.AvailableBuffer(), int64(code), 10))
	bw.WriteByte(' ')
	if text := http.StatusText(code); text != "" {
		bw.WriteString(text)
	} else {
		bw.WriteString("status code " + strconv.Itoa(code))
	}
	bw.WriteString("\r\n")
}

// writeHeaderFields writes h as Header.Write does, less the trailers to come and the
// names that are not tokens. nil: the handler's header.
func (w *response) writeHeaderFields(h http.Header) {
	if h == nil {
		h = w.header
	}
	for k, vv := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) || !httpguts.ValidHeaderFieldName(k) || slices.Contains(w.trailers, k) {
			continue
		}
		for _, v := range vv {
			writeField(w.c, k, v)
		}
	}
}

func (w *response) writeTrailers() {
	for k, vv := range w.header {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok && httpguts.ValidHeaderFieldName(name) {
			for _, v := range vv {
				writeField(w.c, name, v)
			}
		}
	}
	for _, k := range w.trailers {
		for _, v := range w.header[k] {
			writeField(w.c, k, v)
		}
	}
}

func writeField(c *conn, name, value string) {
	// Two IndexByte scans: ContainsAny built its set per value, 2.6% of the CPU.
	if strings.IndexByte(value, '\r') >= 0 || strings.IndexByte(value, '\n') >= 0 {
		value = strings.NewReplacer("\r", " ", "\n", " ").Replace(value)
	}
	bw := c.bw
	bw.WriteString(name)
	bw.WriteString(": ")
	bw.WriteString(textproto.TrimString(value))
	bw.WriteString("\r\n")
}

// bodyAllowed reports whether a response with status may have a body (RFC 9112).
func bodyAllowed(status int) bool {
	return !(status >= 100 && status <= 199 || status == http.StatusNoContent || status == http.StatusNotModified)
}
