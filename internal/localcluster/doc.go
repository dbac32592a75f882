// Package localcluster runs a real Kubernetes control plane inside the calling process:
// embedded etcd, kube-apiserver, kube-controller-manager and kube-scheduler (all
// v1.37.2, built from k8s.io/kubernetes as a library), and kwok with one fake Node, so
// that Deployments get Pods that become Running and Ready without a container runtime.
// It installs Ferry's CRDs and writes a kubeconfig.
//
// `ferry up` and the integration tests use it; the in-cluster controller does not, so
// its binary does not link any of this.
//
// Pods are simulated: their IPs come from a range that nothing listens on and that
// Ferry's gateway never dials when told the pods are simulated. Two test images make
// kwok simulate failures: ferry.test/image-pull-error (ErrImagePull) and
// ferry.test/exit-1 (a container that exits 1 and crash-loops).
package localcluster
