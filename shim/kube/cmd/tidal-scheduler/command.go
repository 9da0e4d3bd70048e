package main

// newCommand is kube-scheduler's app.NewSchedulerCommand (k8s.io/kubernetes v1.36.3,
// cmd/kube-scheduler/app/server.go: the same flags, the same runCommand steps), with one step
// added between app.Setup and app.Run: when leader election is on, the lease lock is wrapped
// (pkg/leader) so that the Tidal plugin knows whether this replica leads. Upstream's command
// keeps its options and CompletedConfig private, so the step cannot be added from outside.
// Revisit on every kube-scheduler bump: diff NewSchedulerCommand and runCommand upstream.

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"k8s.io/apiserver/pkg/server"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/tidal-sched/tidal/shim/kube/pkg/leader"
)

func newCommand(registryOptions ...app.Option) *cobra.Command {
	opts := options.NewOptions()
	cmd := &cobra.Command{
		Use: "tidal-scheduler",
		Long: `tidal-scheduler is kube-scheduler with the Tidal plugin registered (enable it per profile in
a KubeSchedulerConfiguration). With leader election on, a standby replica keeps its tidal-engine in
sync from its informers and writes nothing to the API server until it holds the lease.`,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return opts.ComponentGlobalsRegistry.Set() // feature gates are set before RunE
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCommand(cmd, opts, registryOptions...)
		},
		Args: func(cmd *cobra.Command, args []string) error {
			for _, arg := range args {
				if len(arg) > 0 {
					return fmt.Errorf("%q does not take any arguments, got %q", cmd.CommandPath(), args)
				}
			}
			return nil
		},
	}
	nfs := opts.Flags
	verflag.AddFlags(nfs.FlagSet("global"))
	globalflag.AddGlobalFlags(nfs.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	fs := cmd.Flags()
	for _, f := range nfs.FlagSets {
		fs.AddFlagSet(f)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, *nfs, cols)
	if err := cmd.MarkFlagFilename("config", "yaml", "yml", "json"); err != nil {
		klog.Background().Error(err, "Failed to mark flag filename")
	}
	return cmd
}

func runCommand(cmd *cobra.Command, opts *options.Options, registryOptions ...app.Option) error {
	verflag.PrintAndExitIfRequested()
	fg := opts.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)
	if err := logsapi.ValidateAndApply(opts.Logs, fg); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	cliflag.PrintFlags(cmd.Flags())

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-server.SetupSignalHandler()
		cancel()
	}()

	cc, sched, err := app.Setup(ctx, opts, registryOptions...)
	if err != nil {
		return err
	}
	// Tidal's step: before Run starts the informers (and so before the plugin can write anything).
	if cc.LeaderElection != nil {
		leader.Enable(cc.LeaderElection.RenewDeadline)
		cc.LeaderElection.Lock = leader.Wrap(cc.LeaderElection.Lock)
		klog.FromContext(ctx).Info("Tidal: leader election on; standing by (engine kept in sync, no API writes) until this replica holds the lease",
			"lock", cc.LeaderElection.Lock.Describe(), "identity", cc.LeaderElection.Lock.Identity())
	}
	fg.(featuregate.MutableFeatureGate).AddMetrics()
	opts.ComponentGlobalsRegistry.AddMetrics()
	return app.Run(ctx, cc, sched)
}
