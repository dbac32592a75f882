package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ferry-serving/ferry/internal/programs"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
)

// programsFilterName is the kube-scheduler filter plugin that places pods between
// kwok's node and the program node.
const programsFilterName = "FerryPrograms"

// programsFilter keeps the pods that run local programs on the program node and every
// other pod off it, so that nothing that kwok simulates today moves, and no pod is
// rewritten to get there.
type programsFilter struct{ images *programs.Images }

var _ fwk.FilterPlugin = programsFilter{}

func (programsFilter) Name() string { return programsFilterName }

func (f programsFilter) Filter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, node fwk.NodeInfo) *fwk.Status {
	onProgramNode := node.Node().Name == programs.NodeName
	switch runs := runsProgram(f.images, pod); {
	case runs == onProgramNode:
		return nil
	case runs:
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) do not run local programs (only "+programs.NodeName+" does)")
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) run only pods of local programs (ferry up --local-image, ko://)")
}

// runsProgram says whether a container of pod has an image that runs a local program.
func runsProgram(images *programs.Images, pod *corev1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		if images.Runs(c.Image) {
			return true
		}
	}
	return false
}

// schedulerConfig writes kube-scheduler's configuration with the programs filter on,
// and returns its path. With --config, the scheduler takes its client settings from
// the file, not from flags.
func schedulerConfig(dir, kubeconfig string) (string, error) {
	path := filepath.Join(dir, "kube-scheduler.yaml")
	config := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: 1000
  burst: 2000
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
  plugins:
    filter:
      enabled:
      - name: %s
`, kubeconfig, programsFilterName)
	return path, os.WriteFile(path, []byte(config), 0o600)
}

func newProgramsFilter(images *programs.Images) func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
	return func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
		return programsFilter{images: images}, nil
	}
}
