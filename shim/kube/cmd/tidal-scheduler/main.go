// Command tidal-scheduler is kube-scheduler (k8s.io/kubernetes, version pinned in
// go.mod) with the out-of-tree Tidal plugin registered. Enable the plugin per
// profile in a KubeSchedulerConfiguration (see test/e2e/config/scheduler-config.yaml
// and deploy/base/scheduler-config.yaml).
package main

import (
	"fmt"
	"os"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/pkg/features"

	"github.com/tidal-sched/tidal/shim/kube/pkg/plugins/tidal"
)

func main() {
	// Gang members wait in Permit. With NominatedNodeNameForExpectation (beta, on by default since
	// v1.35) kube-scheduler writes status.nominatedNodeName when a pod starts waiting, but does not
	// clear it when the wait is rejected (the failure path compares against the pod as it was
	// before the write). The members of a released gang then keep "holding" their old nodes for
	// NodeResourcesFit (nominated pods of equal priority count on their node), and the engine's next
	// plan for the same gang collides with them again and again. Off by default in this binary;
	// --feature-gates=NominatedNodeNameForExpectation=true still turns it on.
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{
		string(features.NominatedNodeNameForExpectation): false,
	}); err != nil {
		fmt.Fprintln(os.Stderr, "tidal-scheduler: feature gates:", err)
		os.Exit(1)
	}
	cmd := newCommand(app.WithPlugin(tidal.Name, tidal.New)) // app.NewSchedulerCommand + pkg/leader (command.go)
	os.Exit(cli.Run(cmd))
}
