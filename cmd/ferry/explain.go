package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ferry-serving/ferry/api/scheme"
	"github.com/ferry-serving/ferry/internal/explain"
	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pluginName is the executable name under which kubectl runs Ferry as a plugin:
// `kubectl ferry explain ...` runs `kubectl-ferry explain ...` from PATH.
const pluginName = "kubectl-ferry"

// asKubectlPlugin makes the help name the command as kubectl users type it when the
// binary runs as kubectl-ferry (a symlink to ferry; `make plugin` installs one).
func asKubectlPlugin(root *cobra.Command) {
	name := strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe")
	if name == pluginName {
		if root.Annotations == nil {
			root.Annotations = map[string]string{}
		}
		root.Annotations[cobra.CommandDisplayNameAnnotation] = "kubectl ferry"
	}
}

type explainFlags struct {
	namespace  string
	kubeconfig string
	context    string
	gateway    string
	timeout    time.Duration
	output     string
}

func newExplainCommand() *cobra.Command {
	var f explainFlags
	cmd := &cobra.Command{
		Use:   "explain (ksvc|service|configuration|revision|route|domainmapping) NAME",
		Short: "Say why a Knative Service (or Configuration, Revision, Route, DomainMapping) is not Ready or not routed, and what to do",
		Long: `Walk the objects a Knative object's readiness depends on —

  Service → Configuration → latest created (and latest ready) Revision → Deployment
          → ReplicaSet → Pods (container states)
          → Route → KIngress → the gateway
  DomainMapping → its ClusterDomainClaim, its reference → KIngress

— with the Warning Events of each, and say on one screen which step is not done, why
(the API server's, the kubelet's or the owner's message), and what to do.

With --gateway URL, one request is sent to that gateway with the Route's host, to
check that it is routed; without, the KIngress status says so.

The exit status is 0 only when the object is Ready (and, for a Service or Route,
routed), 1 otherwise. Also a kubectl plugin: kubectl ferry explain ksvc NAME.`,
		Example: `  ferry explain ksvc hello -n default
  ferry explain ksvc hello --gateway http://127.0.0.1:8080
  kubectl ferry explain revision hello-00002
  ferry explain dm www.example.org`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExplain(cmd.Context(), cmd.OutOrStdout(), f, args[0], args[1])
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.namespace, "namespace", "n", "", "the object's namespace (default: the kubeconfig context's, else default)")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig to use (default: $KUBECONFIG, else ~/.kube/config)")
	fl.StringVar(&f.context, "context", "", "the kubeconfig context to use")
	fl.StringVar(&f.gateway, "gateway", "", "the gateway's URL (e.g. http://127.0.0.1:8080): send one request with the Route's host")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "give up reading the objects (and asking the gateway) after this long")
	fl.StringVarP(&f.output, "output", "o", "text", "text, or json (the report as JSON)")
	return cmd
}

func runExplain(ctx context.Context, out io.Writer, f explainFlags, kindArg, name string) error {
	kind, err := explain.ParseKind(kindArg)
	if err != nil {
		return err
	}
	if f.output != "text" && f.output != "json" {
		return fmt.Errorf("explain: --output %q: want text or json", f.output)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.context})
	cfg, err := loader.ClientConfig()
	if err != nil {
		return fmt.Errorf("explain: reading the kubeconfig: %w", err)
	}
	ns := f.namespace
	if ns == "" {
		if ns, _, err = loader.Namespace(); err != nil || ns == "" {
			ns = "default"
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	report, err := explain.Check(ctx, c, explain.Target{Kind: kind, Namespace: ns, Name: name}, f.gateway)
	if err != nil {
		return err
	}
	if f.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return err
		}
	} else {
		report.Write(out)
	}
	if !report.OK {
		return errNotReady
	}
	return nil
}

// errNotReady ends `ferry explain` with exit status 1 after the report said why.
var errNotReady = errors.New("explain: not Ready and routed (see above)")
