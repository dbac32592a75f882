package http1

import (
	"bytes"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"

	"golang.org/x/net/http/httpguts"
)

type verdict int

const (
	incomplete verdict = iota
	complete
	declined // net/http takes the connection from this request on
	closed
)

// maxLeanHeaders bounds the header fields of a request the lean loop takes.
const maxLeanHeaders = 100

// parseRequest parses the request head at the start of b. It takes only what net/http
// reads the same way without a doubt, and builds the request net/http's server would:
//
//   - the request line `METHOD SP origin-form SP HTTP/1.1 CRLF`, a token for method
//     (not CONNECT, nor PRI: h2c's preface), the target printable ASCII;
//   - fields `name ":" OWS value OWS CRLF`, the name a token, the value printable
//     ASCII or tabs, no line folding, at most maxLeanHeaders;
//   - exactly one valid Host, and no field that brings a body or changes the
//     protocol or the request: Content-Length, Transfer-Encoding, Upgrade, Expect,
//     HTTP2-Settings, Pragma (net/http adds Cache-Control for it);
//   - the head within limit.
//
// Anything else is declined, so that net/http reads it. n is the head's length. The
// request is filled in from the caller, so that the copy WithContext makes is the
// only one allocated.
func parseRequest(req *http.Request, b []byte, limit int) (n int, v verdict) {
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		if len(b) >= limit {
			return 0, declined
		}
		return 0, incomplete
	}
	n = end + 4
	if n > limit {
		return 0, declined
	}
	// One string for the head: every part of the request is a piece of it.
	head := string(b[:end+2])
	line, rest, _ := strings.Cut(head, "\r\n")
	method, target, proto, ok := requestLine(line)
	if !ok {
		return 0, declined
	}
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return 0, declined
	}
	fields := strings.Count(rest, "\n")
	if fields > maxLeanHeaders {
		return 0, declined
	}
	header := make(http.Header, fields)
	values := make([]string, fields)
	host, hosts := "", 0
	for rest != "" {
		var field string
		field, rest, _ = strings.Cut(rest, "\r\n")
		name, value, ok := headerField(field)
		if !ok {
			return 0, declined
		}
		name = textproto.CanonicalMIMEHeaderKey(name)
		switch name {
		case "Host":
			host, hosts = value, hosts+1
			continue
		case "Content-Length", "Transfer-Encoding", "Upgrade", "Expect", "Http2-Settings", "Pragma":
			return 0, declined
		}
		if vv, ok := header[name]; ok {
			header[name] = append(vv, value)
			continue
		}
		values[0] = value
		header[name] = values[:1:1]
		values = values[1:]
	}
	if hosts != 1 || !httpguts.ValidHostHeader(host) {
		return 0, declined
	}
	*req = http.Request{
		Method:     method,
		URL:        u,
		Proto:      proto,
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     header,
		Body:       http.NoBody,
		Host:       host,
		RequestURI: target,
		Close:      httpguts.HeaderValuesContainsToken(header["Connection"], "close"),
	}
	return n, complete
}

func requestLine(line string) (method, target, proto string, ok bool) {
	sp1 := strings.IndexByte(line, ' ')
	if sp1 <= 0 {
		return "", "", "", false
	}
	method, rest := line[:sp1], line[sp1+1:]
	sp2 := strings.IndexByte(rest, ' ')
	if sp2 <= 0 {
		return "", "", "", false
	}
	target, proto = rest[:sp2], rest[sp2+1:]
	if proto != "HTTP/1.1" || method == "CONNECT" || method == "PRI" || !isToken(method) || target[0] != '/' {
		return "", "", "", false
	}
	for i := 0; i < len(target); i++ {
		if c := target[i]; c <= ' ' || c >= 0x7f {
			return "", "", "", false
		}
	}
	return method, target, proto, true
}

// headerField splits a field line into its name and its value without the
// surrounding blanks.
func headerField(field string) (name, value string, ok bool) {
	colon := strings.IndexByte(field, ':')
	if colon <= 0 || !isToken(field[:colon]) {
		return "", "", false
	}
	value = field[colon+1:]
	for i := 0; i < len(value); i++ {
		if c := value[i]; (c < ' ' && c != '\t') || c >= 0x7f {
			return "", "", false
		}
	}
	return field[:colon], trimBlanks(value), true
}

func trimBlanks(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if !httpguts.IsTokenRune(rune(s[i])) {
			return false
		}
	}
	return s != ""
}
