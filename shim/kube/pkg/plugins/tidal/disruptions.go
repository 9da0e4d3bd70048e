package tidal

// The one disruption path: the engine decides what comes off GPUs and when, whatever the cause
// (preemption and reclaim victims that checkpoint on notice, runtime limits, gangs that lost a
// member, drains, ...); the shim asks it every disruptionIntervalMs (Disruptions, door
// KUBERNETES) and acts:
//
//	NOTICE  each live pod of the action gets the notice (notice.go); nothing is evicted.
//	EVICT   the action's live pods are judged WHOLE against PodDisruptionBudgets (evict.go): if
//	        they refuse, none is evicted (event TidalDisruptionBlocked on the pods; reported as
//	        Evicted{protected_gangs: [id], disruption: id}); else each is evicted (Eviction API,
//	        UID precondition; event TidalDisrupted, or TidalRuntimeLimitExceeded for the cause
//	        runtime-limit) and the evictions reported (Evicted{pods, disruption: id, reason: cause}).
//
// An action repeats at every poll until its pods are gone: pods gone, replaced (another UID) or
// already terminating are skipped, so a pod is evicted and reported once, and events are written
// once per pod and action (p.event drops repeats). The poller asks only while the Sync stream is
// synced (a refused scheduler must not act on the holder's disruptions) and only on the leader.
//
// The answer also carries node events (a pool lent, reclaimed or got back a node): written as
// Normal events on the nodes (TidalNodeLent, TidalNodeReclaimed, TidalNodeReturned); and the
// Kubernetes pool's nodes lent to Slurm, which keep the taint tidal.dev/lent-to while lent
// (taints.go).
//
// A disruption the engine called off while in notice is simply no longer answered: after each
// successful answer the poller withdraws the notice of the pods it no longer names (withdraw.go).
//
// An engine without the RPC (older: it answers Unimplemented) still gets runtime limits enforced:
// the poller falls back to Overdue (overdue.go), at most every overdueIntervalMs.
//
// One poller per engine client (profiles share a client per engine address; the first profile's
// intervals configure it): each action is carried out by the profile whose pods it names (the
// scheduler of its first live pod), else by the first profile.
//
// Threading: one goroutine per engine client, started by the first instance's New and ended with
// that instance's context; instances register under mu, the fallback's state is guarded by mu. A
// poll's actions (one workload each) run in up to actionWorkers goroutines, joined before the poll
// ends; what they share (events, notice bookkeeping) has its own lock.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
	"github.com/tidal-sched/tidal/shim/kube/pkg/engineclient"
	"github.com/tidal-sched/tidal/shim/kube/pkg/leader"
)

// actionWorkers: how many of one poll's actions (notices, evictions) run at once.
const actionWorkers = 8

// Event reasons of the disruption path (see also ReasonDisruptionNotice, ReasonRuntimeLimit).
const (
	ReasonDisrupted         = "TidalDisrupted"
	ReasonDisruptionBlocked = "TidalDisruptionBlocked"
)

type disruptionPoller struct {
	client       *engineclient.Client
	logger       klog.Logger
	overdueEvery time.Duration

	mu          sync.Mutex
	plugins     []*Plugin
	legacy      bool      // the engine's last answer was Unimplemented (logged once per change)
	lastOverdue time.Time // the fallback's last Overdue round

	notices noticeBook // for withdrawing called-off notices (withdraw.go); its own mu
	// The earliest deadline of the notices the last answer named (zero: none); the poll goroutine's
	// own (once and run), no lock.
	nextDeadline time.Time
}

// disruptionPollers: the one poller per engine client.
var disruptionPollers sync.Map // *engineclient.Client -> *disruptionPoller

// pollDisruptions registers p with its client's poller, starting the poller (every `every`) if it
// is the client's first instance; it returns the poller.
func pollDisruptions(ctx context.Context, client *engineclient.Client, p *Plugin, every, overdueEvery time.Duration,
	logger klog.Logger) *disruptionPoller {
	v, loaded := disruptionPollers.LoadOrStore(client, &disruptionPoller{client: client, logger: logger, overdueEvery: overdueEvery})
	dp := v.(*disruptionPoller)
	dp.mu.Lock()
	dp.plugins = append(dp.plugins, p)
	dp.mu.Unlock()
	if !loaded {
		go dp.run(ctx, every)
	}
	return dp
}

func (dp *disruptionPoller) run(ctx context.Context, every time.Duration) {
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if dp.client.Synced() && leader.Leading() { // a standby replica disrupts nothing
				dp.once(ctx)
			}
			t.Reset(dp.nextWait(every, time.Now()))
		}
	}
}

// nextWait: `every`, or less when a notice given at the last poll ends sooner, so its pods are
// evicted at their deadline rather than up to a poll later (the engine's clock is in seconds: the
// poll comes just after the deadline's second begins).
func (dp *disruptionPoller) nextWait(every time.Duration, now time.Time) time.Duration {
	if dp.nextDeadline.IsZero() {
		return every
	}
	wait := dp.nextDeadline.Sub(now) + 20*time.Millisecond
	if wait >= every {
		return every
	}
	return max(wait, 10*time.Millisecond)
}

// once asks the engine once and carries out its actions; it returns the pods it gave notice to,
// evicted, or withdrew a called-off notice from ("ns/name"). A failed call is logged at V(2); the
// next tick asks again.
func (dp *disruptionPoller) once(ctx context.Context) []string {
	asked, synced, epoch := time.Now(), dp.client.Synced(), dp.client.Epoch()
	resp, err := dp.client.Disruptions(ctx, tidalv1.FrontDoor_KUBERNETES)
	if status.Code(err) == codes.Unimplemented {
		return dp.overdue(ctx)
	}
	dp.setLegacy(false)
	if err != nil {
		dp.logger.V(2).Info("disruptions: engine not asked; retried next tick", "err", dp.client.Describe(err))
		return nil
	}
	dp.nodeEvents(resp.GetNodeEvents())
	dp.nextDeadline = time.Time{}
	// Each action is one workload's: they run side by side (at most actionWorkers at once), so a
	// reclaim of many victims whose notices end together frees their room together, not one
	// Eviction API round trip after another. out keeps the engine's order.
	done := make([][]string, len(resp.GetDisruptions()))
	var g errgroup.Group
	g.SetLimit(actionWorkers)
	for i, d := range resp.GetDisruptions() {
		if dl := time.Unix(d.GetDeadlineUnix(), 0); d.GetAction() == tidalv1.Disruption_NOTICE && dl.After(asked) &&
			(dp.nextDeadline.IsZero() || dl.Before(dp.nextDeadline)) {
			dp.nextDeadline = dl
		}
		p := dp.owner(d)
		if p == nil {
			break
		}
		switch d.GetAction() {
		case tidalv1.Disruption_NOTICE:
			g.Go(func() error {
				done[i] = p.notice(ctx, d.GetPods(), d.GetCause(), d.GetReason(), time.Unix(d.GetDeadlineUnix(), 0))
				return nil
			})
		case tidalv1.Disruption_EVICT:
			g.Go(func() error { done[i] = p.evictDisruption(ctx, d); return nil })
		default:
			dp.logger.V(2).Info("disruptions: unknown action ignored", "id", d.GetId(), "action", d.GetAction())
		}
	}
	_ = g.Wait() // the actions report their own failures (logs, events); none returns an error
	var out []string
	for _, o := range done {
		out = append(out, o...)
	}
	// The answer is the whole current set only if it came from the engine this stream synced with
	// (an engine that restarted under the call knows nothing yet): else nothing is withdrawn.
	if synced && dp.client.Synced() && dp.client.Epoch() == epoch {
		out = append(out, dp.withdraw(ctx, resp, asked)...)
		dp.syncLentTaints(ctx, resp) // the Kubernetes pool's nodes lent to Slurm (taints.go)
	}
	return out
}

// nodeEvents writes what the engine did with nodes (a pool lent one, reclaimed it, got it back) as
// Normal events on them, through the first profile's recorder (the poller runs on the leader only).
func (dp *disruptionPoller) nodeEvents(evs []*tidalv1.NodeWarning) {
	if len(evs) == 0 {
		return
	}
	dp.mu.Lock()
	var p *Plugin
	if len(dp.plugins) > 0 {
		p = dp.plugins[0]
	}
	dp.mu.Unlock()
	if p == nil || p.handle == nil || p.handle.EventRecorder() == nil || p.nodes == nil {
		return
	}
	for _, e := range evs {
		n, err := p.nodes.Get(e.GetNode())
		if err != nil {
			continue // not a Kubernetes node (a Slurm-only one) or gone
		}
		p.handle.EventRecorder().Eventf(n, nil, v1.EventTypeNormal, e.GetReason(), "Lending", "%s", e.GetMessage())
	}
}

// overdue is the fallback for an engine without Disruptions: every profile evicts its pods past
// their runtime limit (Overdue), at most every overdueEvery.
func (dp *disruptionPoller) overdue(ctx context.Context) []string {
	dp.setLegacy(true)
	dp.mu.Lock()
	due := time.Since(dp.lastOverdue) >= dp.overdueEvery
	if due {
		dp.lastOverdue = time.Now()
	}
	plugins := append([]*Plugin(nil), dp.plugins...)
	dp.mu.Unlock()
	if !due {
		return nil
	}
	var out []string
	for _, p := range plugins {
		out = append(out, p.evictOverdue(ctx)...)
	}
	return out
}

func (dp *disruptionPoller) setLegacy(legacy bool) {
	dp.mu.Lock()
	changed := dp.legacy != legacy
	dp.legacy = legacy
	dp.mu.Unlock()
	if changed && legacy {
		dp.logger.Info("tidal-engine has no Disruptions RPC (an older engine): runtime limits are enforced through Overdue",
			"every", dp.overdueEvery)
	} else if changed {
		dp.logger.Info("tidal-engine answers Disruptions again: the one disruption path is back")
	}
}

// owner is the profile whose pods d names (the scheduler of its first live pod), else the first.
func (dp *disruptionPoller) owner(d *tidalv1.Disruption) *Plugin {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	if len(dp.plugins) == 0 {
		return nil
	}
	for _, r := range d.GetPods() {
		pod := dp.plugins[0].livePod(r)
		if pod == nil {
			continue
		}
		for _, p := range dp.plugins {
			if p.profile == pod.Spec.SchedulerName {
				return p
			}
		}
		break
	}
	return dp.plugins[0]
}

// evictDisruption carries out one EVICT action: its live pods whole or none (see the top of the
// file). It returns the pods it evicted.
func (p *Plugin) evictDisruption(ctx context.Context, d *tidalv1.Disruption) []string {
	var live []*v1.Pod
	var refs []*tidalv1.PodRef
	for _, r := range d.GetPods() {
		if pod := p.livePod(r); pod != nil {
			live = append(live, pod)
			refs = append(refs, r)
		}
	}
	if len(live) == 0 {
		return nil // gone or going: the engine closes the disruption when Sync says so
	}
	why, err := p.pdbBlocked(ctx, []victimGang{{id: d.GetId(), pods: refs}})
	if err != nil {
		// Unchecked, a gang might be broken by the Eviction API's per-pod checks: evict nothing now.
		p.logger.Info("disruption: cannot check PodDisruptionBudgets; retried next poll", "id", d.GetId(), "err", err)
		return nil
	}
	if len(why) > 0 { // one workload: one entry
		for _, w := range why {
			p.disruptionBlocked(ctx, d, live, w)
		}
		return nil
	}
	reason := ReasonDisrupted
	if d.GetCause() == "runtime-limit" {
		reason = ReasonRuntimeLimit // the reason users and alerts know for runtime limits
	}
	note := fmt.Sprintf("evicted by %s: %s: %s", p.profile, d.GetCause(), d.GetReason())
	errs, at := p.evictWhole(ctx, refs)
	if at >= 0 { // a budget changed since the check: the workload stays whole
		p.disruptionBlocked(ctx, d, live, "the Eviction API refused "+key(live[at])+": "+errs[at].Error())
		return nil
	}
	var evicted []*tidalv1.PodRef
	var out []string
	for i, err := range errs {
		switch {
		case err == nil:
			p.event(live[i], v1.EventTypeWarning, reason, note)
			evicted = append(evicted, refs[i])
			out = append(out, key(live[i]))
		case !apierrors.IsNotFound(err): // NotFound: gone already
			p.logger.Info("disruption: eviction failed; retried next poll", "pod", klog.KObj(live[i]), "id", d.GetId(), "err", err)
		}
	}
	if len(evicted) > 0 {
		p.logger.Info("disruption: evicted", "id", d.GetId(), "cause", d.GetCause(), "pods", len(evicted), "why", d.GetReason())
	}
	p.reportEvicted(ctx, &tidalv1.EvictedRequest{Pods: evicted, Reason: d.GetCause(), Disruption: d.GetId()})
	return out
}

// disruptionBlocked: PDBs do not allow evicting the action's pods whole; none is evicted, each
// gets an event, and the engine hears it as a protected workload of the disruption.
func (p *Plugin) disruptionBlocked(ctx context.Context, d *tidalv1.Disruption, live []*v1.Pod, why string) {
	note := fmt.Sprintf("not evicted for %s (%s): %s", d.GetCause(), d.GetReason(), why)
	for _, pod := range live {
		p.event(pod, v1.EventTypeNormal, ReasonDisruptionBlocked, note)
	}
	p.logger.V(2).Info("disruption: protected by PodDisruptionBudgets", "id", d.GetId(), "why", why)
	p.reportEvicted(ctx, &tidalv1.EvictedRequest{ProtectedGangs: []string{d.GetId()}, Reason: d.GetCause(), Disruption: d.GetId()})
}
