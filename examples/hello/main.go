// Command hello is the example app of Ferry's README: a Knative Service's program that
// says which Revision and pod answered, logs each request, and can take its time
// (?sleep=MS), so that a traffic split, scaling under `ferry load` and `kubectl logs`
// show on `ferry up`, where its image ko://github.com/ferry-serving/ferry/examples/hello
// runs as a real process.
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	port := getenv("PORT", "8080")
	target := getenv("TARGET", "World")
	host, _ := os.Hostname()
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if ms, err := strconv.Atoi(r.URL.Query().Get("sleep")); err == nil && ms > 0 {
			time.Sleep(time.Duration(ms) * time.Millisecond)
		}
		log.Printf("%s %s from %s", r.Method, r.URL.RequestURI(), r.RemoteAddr)
		fmt.Fprintf(w, "Hello %s! Revision %s, pod %s (pid %d)\n", target, os.Getenv("K_REVISION"), host, os.Getpid())
	})
	srv := &http.Server{Addr: ":" + port, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		// Kubernetes stops a pod with SIGTERM: finish the requests under way.
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
		<-stop
		log.Print("SIGTERM: shutting down")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	log.Printf("hello: revision %s listening on :%s", os.Getenv("K_REVISION"), port)
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		log.Fatal(err)
	}
}

// getenv is the environment variable key, or fallback when it is unset or empty.
func getenv(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}
