package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// readResponse reads the head of a pod's answer on the pooled exchange. A plain one,
// nearly every answer, is parsed in place; the rest by http.ReadResponse, whose
// textproto reader and per-field strings were 7% of the gateway's CPU at c=64
// (docs/gateway.md, "A lean HTTP/1.1 server"). With into, the header of the client's
// answer, a plain answer's fields go straight into it less the hop-by-hop ones
// (merged reports it; res.Header is then into); writeAndRead adds the others'.
func readResponse(br *bufio.Reader, req *http.Request, into http.Header) (res *http.Response, merged bool, err error) {
	if res := plainResponse(br, req, into); res != nil {
		return res, into != nil, nil
	}
	res, err = http.ReadResponse(br, req)
	return res, false, err
}

// maxPlainFields bounds the fields of a plain answer head; one with more goes to
// http.ReadResponse.
const maxPlainFields = 32

type plainField struct{ name, value string }

// plainResponse parses the answer head buffered in br if http.ReadResponse would read
// it the same way without a doubt, and returns nil otherwise, leaving br and into as
// they were: `HTTP/1.1 NNN reason`, a status that has a body (200–599 but 204 and
// 304) to a request that is not HEAD, at most maxPlainFields fields with token names
// and printable-ASCII values, no folding, exactly one Content-Length of digits, no
// Transfer-Encoding, Trailer, Connection or Pragma. FuzzPlainResponse holds it to
// http.ReadResponse, and its merge into a header to ReverseProxy's.
func plainResponse(br *bufio.Reader, req *http.Request, into http.Header) *http.Response {
	if req.Method == http.MethodHead {
		return nil
	}
	b, _ := br.Peek(br.Buffered())
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		return nil
	}
	head := string(b[:end+2])
	line, rest, _ := strings.Cut(head, "\r\n")
	if len(line) < len("HTTP/1.1 200 ") || line[:9] != "HTTP/1.1 " || line[12] != ' ' || !printable(line[13:]) {
		return nil
	}
	code := 0
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return nil
		}
		code = code*10 + int(c-'0')
	}
	if code < 200 || code == http.StatusNoContent || code == http.StatusNotModified {
		return nil
	}
	var fields [maxPlainFields]plainField
	n := 0
	length := int64(-1)
	for rest != "" {
		if n == len(fields) {
			return nil
		}
		var field string
		field, rest, _ = strings.Cut(rest, "\r\n")
		colon := strings.IndexByte(field, ':')
		if colon <= 0 || !httpguts.ValidHeaderFieldName(field[:colon]) || !printable(field[colon+1:]) {
			return nil
		}
		name, value := textproto.CanonicalMIMEHeaderKey(field[:colon]), textproto.TrimString(field[colon+1:])
		switch name {
		case "Transfer-Encoding", "Trailer", "Connection", "Pragma":
			return nil
		case "Content-Length":
			v, err := strconv.ParseInt(value, 10, 64)
			if length != -1 || err != nil || v < 0 || value == "" || value[0] < '0' || value[0] > '9' {
				return nil
			}
			length = v
		}
		fields[n] = plainField{name, value}
		n++
	}
	if length == -1 {
		return nil
	}
	header := into
	if header == nil {
		header = make(http.Header, n)
	}
	values := make([]string, n) // every field's value, one allocation
	for _, f := range fields[:n] {
		// ReverseProxy removes the hop-by-hop fields of the answer, then adds the rest
		// to the client's header value by value.
		if into != nil && slices.Contains(hopHeaders, f.name) {
			continue
		}
		if vv, ok := header[f.name]; ok {
			header[f.name] = append(vv, f.value)
			continue
		}
		values[0] = f.value
		header[f.name] = values[:1:1]
		values = values[1:]
	}
	br.Discard(end + 4)
	res := &http.Response{Status: line[9:], StatusCode: code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: header, ContentLength: length, Request: req, Body: http.NoBody}
	if length > 0 {
		res.Body = &plainBody{br: br, left: length}
	}
	return res
}

// printable reports whether s is printable ASCII and tabs only.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

// plainBody is an answer's body of a known length.
type plainBody struct {
	br   *bufio.Reader
	left int64
}

func (b *plainBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.br.Read(p)
	b.left -= int64(n)
	switch {
	case b.left == 0:
		return n, io.EOF
	case err == io.EOF:
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *plainBody) Close() error { return nil }
