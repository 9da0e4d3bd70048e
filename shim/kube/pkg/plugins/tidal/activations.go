package tidal

// Cross-door activations: when another front door's call (the Slurm adapter's Admit) plans a
// Kubernetes gang ahead by fair share, the engine queues that gang's pods for
// TakeActivations(door=KUBERNETES). The shim polls it every activationIntervalMs and moves the
// returned pods to kube-scheduler's active queue, the same way it handles PlanResponse.activate
// (activateRefs): only pods a profile has pending are activated; others are skipped silently.
//
// The engine returns each pod once, so there is one poller per engine client (profiles share a
// client per engine address): it hands every answer to each profile's instance, and each activates
// its own pods. The poller asks only while the client is Synced: a scheduler whose Sync stream the
// engine refuses (another holder has the door) must not take the holder's activations.
//
// Threading: one goroutine per engine client, started by the first instance's New and ended with
// that instance's context; instances register under mu.

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/tidal-sched/tidal/shim/kube/pkg/engineclient"
)

type activationPoller struct {
	client *engineclient.Client
	logger klog.Logger

	mu      sync.Mutex
	plugins []*Plugin
}

// activationPollers: the one poller per engine client.
var activationPollers sync.Map // *engineclient.Client -> *activationPoller

// pollActivations registers p with its client's poller, starting the poller (every `every`) if it
// is the client's first instance.
func pollActivations(ctx context.Context, client *engineclient.Client, p *Plugin, every time.Duration, logger klog.Logger) {
	v, loaded := activationPollers.LoadOrStore(client, &activationPoller{client: client, logger: logger})
	ap := v.(*activationPoller)
	ap.mu.Lock()
	ap.plugins = append(ap.plugins, p)
	ap.mu.Unlock()
	if !loaded {
		go ap.run(ctx, every)
	}
}

func (ap *activationPoller) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if ap.client.Synced() {
				ap.once(ctx)
			}
		}
	}
}

// once takes the engine's activations and activates them; it returns the pods activated
// ("ns/name"). A failed call is logged at V(2); the next tick asks again (the engine keeps the
// pods until they are taken).
func (ap *activationPoller) once(ctx context.Context) []string {
	resp, err := ap.client.TakeActivations(ctx)
	if err != nil {
		ap.logger.V(2).Info("cross-door activations: engine not asked; retried next tick", "err", ap.client.Describe(err))
		return nil
	}
	refs := resp.GetPods()
	if len(refs) == 0 {
		return nil
	}
	ap.mu.Lock()
	plugins := append([]*Plugin(nil), ap.plugins...)
	ap.mu.Unlock()
	var activated []string
	for _, p := range plugins {
		activated = append(activated, p.activateRefs(refs, "planned ahead by fair share (another front door)")...)
	}
	ap.logger.V(2).Info("cross-door activations", "taken", len(refs), "activated", len(activated))
	return activated
}
