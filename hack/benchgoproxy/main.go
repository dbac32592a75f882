// Command benchgoproxy is a reference row of hack/bench-dataplane.sh: the least a
// proxy written in Go does, to tell what on this machine is the gateway's cost and
// what any Go proxy pays.
//
//	-mode tcp   copies bytes between each client connection and a backend connection
//	            of its own, with plain reads and writes: no HTTP at all, the ceiling of
//	            any Go proxy here (io.Copy is not used, since between two TCP
//	            connections it splices through a pipe, which takes more system calls)
//	-mode http  net/http's server and httputil.ReverseProxy with a keep-alive pool and
//	            nothing else: the standard library's HTTP/1.1 proxy
package main

import (
	"flag"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:19086", "address to listen on")
	backend := flag.String("backend", "127.0.0.1:19091", "the backend's host:port")
	mode := flag.String("mode", "tcp", "tcp or http")
	flag.Parse()
	switch *mode {
	case "tcp":
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			log.Fatal(err)
		}
		for {
			c, err := ln.Accept()
			if err != nil {
				log.Fatal(err)
			}
			go pipe(c, *backend)
		}
	case "http":
		target := &url.URL{Scheme: "http", Host: *backend}
		proxy := &httputil.ReverseProxy{
			Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
			Transport: &http.Transport{MaxIdleConnsPerHost: 128},
		}
		log.Fatal(http.ListenAndServe(*addr, proxy))
	default:
		log.Fatalf("-mode %q: want tcp or http", *mode)
	}
}

// pipe copies between c and a new connection to backend until either side closes.
func pipe(c net.Conn, backend string) {
	defer c.Close()
	b, err := net.Dial("tcp", backend)
	if err != nil {
		log.Print(err)
		return
	}
	defer b.Close()
	done := make(chan struct{}, 2)
	go copyBytes(b, c, done)
	go copyBytes(c, b, done)
	<-done
}

func copyBytes(dst, src net.Conn, done chan<- struct{}) {
	defer func() { done <- struct{}{} }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
