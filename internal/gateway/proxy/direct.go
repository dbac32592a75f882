package proxy

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"slices"
	"strings"

	"github.com/ferry-serving/ferry/internal/gateway/routing"
	"golang.org/x/net/http/httpguts"
)

// The direct path forwards the requests upstream's fast path takes (GET, HEAD and
// OPTIONS without a body) to HTTP/1.1 pods without httputil.ReverseProxy: the request
// line and headers are written from the client's request straight to the pooled
// connection, with no clone of the request or its headers, and the response is copied
// back on the handler's goroutine. ReverseProxy's share of the CPU without the round
// trip was 16% (docs/gateway.md); this does what it and forwarder.rewrite do for
// these requests, checked line by line against net/http/httputil's reverseproxy.go
// and net/http's Request.write (Go 1.26), and by the tests that send the same request
// both ways (direct_test.go). This file says which requests take it and writes them;
// forwarder.forwardDirect (forwarder.go) sends them and copies the answer back.

// direct reports whether r, routed to an HTTP/1.1 pod, can take the direct path:
// the fast path's requests, with nothing that ReverseProxy or Request.write would
// rewrite (a query cleanQueryParams re-encodes, an opaque URL, a Host to be
// punycoded or stripped of its zone).
func direct(r *http.Request, rr *routedRequest) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		return false
	}
	if rr.target.H2C || r.ContentLength != 0 || len(r.TransferEncoding) != 0 || r.URL.Opaque != "" {
		return false
	}
	if _, ok := r.Header["Upgrade"]; ok {
		return false
	}
	return plainQuery(r.URL.RawQuery) && plainHost(outHost(r, rr))
}

// plainQuery reports that httputil's cleanQueryParams leaves q as it is: no ';', no
// malformed escape, and well below its limit of parameters.
func plainQuery(q string) bool {
	if q != "" && reencodeQueries || strings.Count(q, "&") >= 1000 {
		return false
	}
	for i := 0; i < len(q); i++ {
		switch q[i] {
		case ';':
			return false
		case '%':
			if i+2 >= len(q) || !ishex(q[i+1]) || !ishex(q[i+2]) {
				return false
			}
		}
	}
	return true
}

// reencodeQueries: with GODEBUG's urlmaxqueryparams set, cleanQueryParams re-encodes
// every query, so those requests keep ReverseProxy.
var reencodeQueries = strings.Contains(os.Getenv("GODEBUG"), "urlmaxqueryparams=")

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// plainHost reports that Request.write sends host as it is: ASCII (nothing to
// punycode), no IPv6 zone, a valid Host header.
func plainHost(host string) bool {
	for i := 0; i < len(host); i++ {
		if host[i] >= 0x80 || host[i] == '%' {
			return false
		}
	}
	return host != "" && httpguts.ValidHostHeader(host)
}

// outHost is the Host the pod sees.
func outHost(r *http.Request, rr *routedRequest) string {
	if rr.route.RewriteHost != "" {
		return rr.route.RewriteHost
	}
	return r.Host
}

// hopHeaders are removed both ways, as ReverseProxy does.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// skipRequestHeader reports whether the client's header name is not forwarded as
// sent: hop-by-hop, named by Connection, a forwarding header the gateway sets
// itself, set by an appendHeader, or one Request.write writes from the request's
// fields (Host, User-Agent, Content-Length, Transfer-Encoding, Trailer).
func skipRequestHeader(name string, connection []string, appended []routing.Header) bool {
	switch name {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade",
		"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto",
		"Host", "User-Agent", "Content-Length":
		return true
	}
	return slices.Contains(connection, name) || setBy(appended, name)
}

// connectionListed returns the canonical names the Connection header lists.
func connectionListed(h http.Header) []string {
	var names []string
	for _, f := range h["Connection"] {
		for sf := range strings.SplitSeq(f, ",") {
			if sf = textproto.TrimString(sf); sf != "" {
				names = append(names, textproto.CanonicalMIMEHeaderKey(sf))
			}
		}
	}
	return names
}

// writeRequest writes what ReverseProxy with forwarder.rewrite would send for r:
// its headers less the hop-by-hop ones, X-Forwarded-* from what the gateway saw, the
// route's and split's appendHeaders (the last of a name wins, as with Header.Set),
// the rewritten Host.
func writeRequest(bw *bufio.Writer, r *http.Request, rr *routedRequest) error {
	ruri := r.URL.RequestURI()
	for i := 0; i < len(ruri); i++ {
		if b := ruri[i]; b < ' ' || b == 0x7f {
			return errControlInURL
		}
	}
	appended := rr.route.AppendHeaders
	if len(rr.split.AppendHeaders) > 0 {
		appended = append(appended[:len(appended):len(appended)], rr.split.AppendHeaders...)
	}
	bw.WriteString(r.Method)
	bw.WriteByte(' ')
	bw.WriteString(ruri)
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(outHost(r, rr))
	bw.WriteString("\r\n")
	var connection []string
	if _, ok := r.Header["Connection"]; ok {
		connection = connectionListed(r.Header)
	}
	// ReverseProxy sets an empty User-Agent when none is left after the hop-by-hop
	// headers went, which Request.write then leaves out; of several, Request.write
	// sends the first.
	userAgent := ""
	if v := r.Header["User-Agent"]; len(v) > 0 && !slices.Contains(connection, "User-Agent") {
		userAgent = v[0]
	}
	for _, h := range appended {
		if h.Name == "User-Agent" {
			userAgent = h.Value
		}
	}
	if userAgent != "" {
		writeHeaderLine(bw, "User-Agent", userAgent)
	}
	for name, values := range r.Header {
		if skipRequestHeader(name, connection, appended) || !httpguts.ValidHeaderFieldName(name) {
			continue
		}
		for _, v := range values {
			writeHeaderLine(bw, name, v)
		}
	}
	if !setBy(appended, "Te") && httpguts.HeaderValuesContainsToken(r.Header["Te"], "trailers") {
		bw.WriteString("Te: trailers\r\n")
	}
	// As ProxyRequest.SetXForwarded after Rewrite dropped the client's, and Forwarded
	// as forwarder.rewrite sets it.
	clientIP, _, _ := net.SplitHostPort(r.RemoteAddr)
	if !setBy(appended, "X-Forwarded-For") && clientIP != "" {
		writeHeaderLine(bw, "X-Forwarded-For", clientIP)
	}
	if !setBy(appended, "X-Forwarded-Host") {
		writeHeaderLine(bw, "X-Forwarded-Host", r.Host)
	}
	proto := "http"
	if r.TLS != nil {
		proto = "https"
	}
	if !setBy(appended, "X-Forwarded-Proto") {
		writeHeaderLine(bw, "X-Forwarded-Proto", proto)
	}
	if !setBy(appended, "Forwarded") {
		bw.WriteString("Forwarded: ")
		bw.Write(appendForwarded(bw.AvailableBuffer(), clientIP, r.Host, proto))
		bw.WriteString("\r\n")
	}
	for i, h := range appended {
		switch h.Name {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue // written from the request's fields, or not at all, by Request.write
		}
		if !setBy(appended[i+1:], h.Name) && httpguts.ValidHeaderFieldName(h.Name) {
			writeHeaderLine(bw, h.Name, h.Value)
		}
	}
	_, err := bw.WriteString("\r\n")
	return err
}

// errControlInURL is Request.write's refusal of a control character in the URL.
var errControlInURL = errors.New("net/http: can't write control character in Request.URL")

func setBy(appended []routing.Header, name string) bool {
	for _, h := range appended {
		if h.Name == name {
			return true
		}
	}
	return false
}

// writeHeaderLine writes a field as Header.Write does: CR and LF in the value become
// spaces, surrounding blanks trimmed.
func writeHeaderLine(bw *bufio.Writer, name, value string) {
	// Two IndexByte scans: ContainsAny built its set per value, 2.6% of the CPU.
	if strings.IndexByte(value, '\r') >= 0 || strings.IndexByte(value, '\n') >= 0 {
		value = strings.NewReplacer("\n", " ", "\r", " ").Replace(value)
	}
	bw.WriteString(name)
	bw.WriteString(": ")
	bw.WriteString(textproto.TrimString(value))
	bw.WriteString("\r\n")
}
