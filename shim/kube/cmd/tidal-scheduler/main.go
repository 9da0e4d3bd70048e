// Command tidal-scheduler is kube-scheduler (k8s.io/kubernetes, version pinned in
// go.mod) with the out-of-tree Tidal plugin registered. Enable the plugin per
// profile in a KubeSchedulerConfiguration (see test/e2e/config/scheduler-config.yaml).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/tidal-sched/tidal/shim/kube/pkg/plugins/tidal"
)

func main() {
	cmd := app.NewSchedulerCommand(app.WithPlugin(tidal.Name, tidal.New))
	os.Exit(cli.Run(cmd))
}
