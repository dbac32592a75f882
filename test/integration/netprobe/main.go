// Command netprobe is the program of the pod networking integration test
// (TestPodNetwork): a pod that tries what a cluster gives it and answers what it saw.
// It listens on $PORT (default 8080):
//
//	/                          "Revision $K_REVISION"
//	/resolve?name=NAME         the addresses NAME resolves to, by the pod's resolv.conf
//	/call?url=URL              the status and body of a GET of URL, or the error
//	/configmaps?namespace=NS   the ConfigMaps of NS by rest.InClusterConfig, or the error
//	/file?path=PATH            the contents of the file at PATH, or the error (500)
//
// TestProgramsInitContainers runs it too, reading what an init container wrote.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "Revision %s\n", os.Getenv("K_REVISION"))
	})
	http.HandleFunc("/env", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, os.Getenv(r.URL.Query().Get("name")))
	})
	http.HandleFunc("/resolve", func(w http.ResponseWriter, r *http.Request) {
		addrs, err := net.DefaultResolver.LookupHost(r.Context(), r.URL.Query().Get("name"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		fmt.Fprintln(w, strings.Join(addrs, " "))
	})
	client := &http.Client{Timeout: 20 * time.Second}
	http.HandleFunc("/call", func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		resp, err := client.Get(r.URL.Query().Get("url"))
		if err != nil {
			http.Error(w, fmt.Sprintf("after %s: %v", time.Since(began).Round(time.Millisecond), err), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		fmt.Fprintf(w, "%d %s", resp.StatusCode, body)
	})
	http.HandleFunc("/configmaps", func(w http.ResponseWriter, r *http.Request) {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		list, err := cs.CoreV1().ConfigMaps(r.URL.Query().Get("namespace")).List(ctx, metav1.ListOptions{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		for _, cm := range list.Items {
			fmt.Fprintln(w, cm.Name)
		}
	})
	http.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) {
		b, err := os.ReadFile(r.URL.Query().Get("path"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = w.Write(b)
	})
	srv := &http.Server{Addr: ":" + port, ReadHeaderTimeout: 10 * time.Second}
	log.Printf("netprobe: revision %s listening on :%s", os.Getenv("K_REVISION"), port)
	log.Fatal(srv.ListenAndServe())
}
