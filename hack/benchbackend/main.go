// Command benchbackend is the one backend of hack/bench-dataplane.sh: it answers
// every request with a short body, over HTTP/1.1 and over h2c with prior knowledge
// on the same port, so that every proxy in the comparison reaches the same process.
package main

import (
	"flag"
	"io"
	"log"
	"net/http"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18091", "address to listen on")
	flag.Parse()
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	server := &http.Server{Addr: *addr, Protocols: protocols, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from the backend\n")
	})}
	log.Fatal(server.ListenAndServe())
}
