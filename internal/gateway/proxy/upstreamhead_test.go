package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// FuzzPlainResponse requires every answer head that plainResponse parses to be read
// the same way by http.ReadResponse: status, header, length, Close, the body, and the
// bytes after it (the next answer on the connection). CI runs the seeds; `make fuzz`
// runs it longer.
func FuzzPlainResponse(f *testing.F) {
	for _, seed := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhelloHTTP/1.1 200 OK\r\n",
		"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nx-a: 1\r\nX-A:  2 \r\n\r\n",
		"HTTP/1.1 599 \r\nContent-Length: 007\r\n\r\n1234567",
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
		"HTTP/1.1 200 OK\r\nContent-Length: +3\r\n\r\nabc",
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc",
		"HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n",
		"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nab",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
		"HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX : a\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: caf\xc3\xa9\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5\r\nContent-Type: a\r\nupgrade: h2c\r\nContent-Length: 0\r\n\r\n",
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, input []byte, head bool) {
		req, _ := http.NewRequest(http.MethodGet, "http://pod/", nil)
		if head {
			req.Method = http.MethodHead
		}
		br := bufio.NewReader(bytes.NewReader(input))
		if _, err := br.Peek(1); err != nil {
			return
		}
		got := plainResponse(br, req, nil)
		if got == nil {
			return
		}
		wantBr := bufio.NewReader(bytes.NewReader(input))
		want, err := http.ReadResponse(wantBr, req)
		if err != nil {
			t.Fatalf("%q: plainResponse took what http.ReadResponse refuses: %v", input, err)
		}
		gotBody, gotErr := io.ReadAll(got.Body)
		wantBody, wantErr := io.ReadAll(want.Body)
		gotRest, _ := io.ReadAll(br)
		wantRest, _ := io.ReadAll(wantBr)
		if got.Status != want.Status || got.StatusCode != want.StatusCode || got.Proto != want.Proto ||
			!reflect.DeepEqual(got.Header, want.Header) || got.ContentLength != want.ContentLength ||
			got.Close != want.Close || !bytes.Equal(gotBody, wantBody) || (gotErr == nil) != (wantErr == nil) ||
			!bytes.Equal(gotRest, wantRest) || len(want.TransferEncoding) > 0 || want.Trailer != nil {
			t.Fatalf("%q:\nplain:            %q %v %d close=%v body %q (%v) rest %q\nhttp.ReadResponse: %q %v %d close=%v body %q (%v) rest %q te %v",
				input, got.Status, got.Header, got.ContentLength, got.Close, gotBody, gotErr, gotRest,
				want.Status, want.Header, want.ContentLength, want.Close, wantBody, wantErr, wantRest, want.TransferEncoding)
		}
		// Merged into the client's header, as the direct path has it: what removing
		// the hop-by-hop fields and adding the rest value by value gives, as
		// ReverseProxy does.
		into := http.Header{"X-Ferry-Activation-Wait": {"0.001s"}, "Content-Type": {"text/html"}}
		wantInto := into.Clone()
		removeHopByHop(want.Header)
		for k, vv := range want.Header {
			for _, v := range vv {
				wantInto.Add(k, v)
			}
		}
		intoBr := bufio.NewReader(bytes.NewReader(input))
		intoBr.Peek(1)
		if res := plainResponse(intoBr, req, into); res == nil || !reflect.DeepEqual(into, wantInto) {
			t.Fatalf("%q: merged into the client's header\n%v\nwant\n%v", input, into, wantInto)
		}
	})
}

// The answers a Go pod gives are plain.
func TestPlainResponseTakesGoAnswers(t *testing.T) {
	req, _ := http.NewRequest(http.MethodGet, "http://pod/", nil)
	in := "HTTP/1.1 200 OK\r\nContent-Length: 23\r\nContent-Type: text/plain; charset=utf-8\r\nDate: Sun, 06 Dec 2026 13:00:00 GMT\r\n\r\nhello from the backend\n"
	br := bufio.NewReader(strings.NewReader(in))
	br.Peek(1)
	if res := plainResponse(br, req, nil); res == nil || res.ContentLength != 23 {
		t.Fatalf("plainResponse = %+v", res)
	}
}

// TestPlainResponseAllocations counts what reading a Go pod's answer head allocates in
// place and by http.ReadResponse (docs/gateway.md quotes it): fewer, or the parser is
// not worth its keep.
func TestPlainResponseAllocations(t *testing.T) {
	req, _ := http.NewRequest(http.MethodGet, "http://pod/", nil)
	in := "HTTP/1.1 200 OK\r\nContent-Length: 23\r\nContent-Type: text/plain; charset=utf-8\r\nDate: Sun, 06 Dec 2026 13:00:00 GMT\r\n\r\nhello from the backend\n"
	r := strings.NewReader(in)
	br := bufio.NewReader(r)
	read := func(f func(*bufio.Reader, *http.Request) (*http.Response, error)) float64 {
		return testing.AllocsPerRun(100, func() {
			r.Reset(in)
			br.Reset(r)
			br.Peek(1)
			res, err := f(br, req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
		})
	}
	plain, std := read(func(br *bufio.Reader, req *http.Request) (*http.Response, error) {
		res, _, err := readResponse(br, req, nil)
		return res, err
	}), read(http.ReadResponse)
	t.Logf("allocations per answer: in place %v, http.ReadResponse %v", plain, std)
	if plain >= std {
		t.Errorf("in place %v allocations, not fewer than http.ReadResponse's %v", plain, std)
	}
}
