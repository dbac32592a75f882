// Command frontend is the front end of Ferry's README tour of programs that talk to
// each other: a public Knative Service whose every answer includes its back end's,
// fetched from $BACKEND (default http://backend.default.svc.cluster.local), a private
// (cluster-local) Service that only the cluster reaches, by its cluster name.
package main

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"time"
)

func main() {
	port := getenv("PORT", "8080")
	backend := getenv("BACKEND", "http://backend.default.svc.cluster.local")
	client := &http.Client{Timeout: 30 * time.Second}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		resp, err := client.Get(backend)
		if err != nil {
			log.Printf("calling %s: %v", backend, err)
			http.Error(w, fmt.Sprintf("frontend %s: the back end at %s: %v", os.Getenv("K_REVISION"), backend, err), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		log.Printf("%s %s: the back end answered %d in %s", r.Method, r.URL.RequestURI(), resp.StatusCode, time.Since(began).Round(time.Millisecond))
		fmt.Fprintf(w, "frontend %s asked %s (%d in %s): %s", os.Getenv("K_REVISION"), backend, resp.StatusCode,
			time.Since(began).Round(time.Millisecond), body)
	})
	srv := &http.Server{Addr: ":" + port, ReadHeaderTimeout: 10 * time.Second}
	log.Printf("frontend: revision %s listening on :%s, back end %s", os.Getenv("K_REVISION"), port, backend)
	log.Fatal(srv.ListenAndServe())
}

// getenv is the environment variable key, or fallback when it is unset or empty.
func getenv(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}
