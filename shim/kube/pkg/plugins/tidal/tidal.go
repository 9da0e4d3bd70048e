// Package tidal is the kube-scheduler plugin "Tidal": a thin bridge from kube-scheduler's extension
// points to tidal-engine. It translates and forwards; every scheduling decision (is the gang
// complete, where does it go, when may it bind, whom to preempt) is the engine's.
//
//	PreEnqueue  CheckPod: gang incomplete (WAIT) -> the pod is held out of the active queue; an
//	            invalid tidal.dev/* label or annotation -> held, with a pod event naming the key
//	            and the accepted values.
//	PreFilter   PlanPod: the gang's first member obtains the whole gang's plan; every member gets
//	            PreFilterResult.NodeNames = {its planned node}. Engine unreachable -> Unschedulable
//	            ("tidal-engine unreachable ...") and a pod event; the pod stays pending.
//	Filter      only the planned node passes;  Score: the planned node gets the maximum.
//	Reserve     Reserve the member's slot;  Unreserve: the engine drops the whole gang's plan and
//	            names the other members; those still waiting in Permit are rejected.
//	Permit      engine WAIT -> framework Wait with the engine's timeout; SUCCESS -> every waiting
//	            member of the gang is allowed at once (or, if one is gone, none is).
//	PostFilter  Preempt: the engine chooses victims (maybe none); the shim evicts them (Eviction API).
//	PostBind    Bound.
//
// Requeueing: gated and rejected pods are moved back by QueueingHints (pod and node events) and, to
// close the race with the Sync stream, after the engine has acknowledged the changes that matter
// (a gang member's pod, freed capacity, a resync after an engine restart): see onSynced. A pod
// held or refused by an answer that was in flight while such a round ran is moved back at once
// (hold, reject), so no wake-up is lost between the engine's answer and the pod's record. Pods that
// another front door's call (a Slurm Admit) planned ahead by fair share are polled from the engine
// and activated (activations.go).
//
// Disruptions: the engine says what comes off GPUs and when (preemption victims that checkpoint
// on notice, runtime limits, ...); the shim polls it, gives notice and evicts (disruptions.go,
// notice.go, evict.go).
//
// High availability (leader election on): kube-scheduler starts the informers, and so this
// plugin's Sync stream and PreEnqueue, before it runs for the lease; a standby replica keeps its
// engine in sync and holds gangs like the leader, but writes nothing to the API server (events,
// evictions, notices, PodGroup status ask pkg/leader first) and never schedules or binds (kube-scheduler
// runs its scheduling loop only once it leads).
//
// Threading: kube-scheduler calls PreEnqueue under its queue lock (so it never blocks long: a short
// timeout, and no call at all while the engine is away), the scheduling-cycle points one pod at a
// time, and Unreserve/PostBind from binding goroutines. The plugin's own bookkeeping (held, rejected
// and waiting pods, reported events) is guarded by mu; hooks run on the engine client's goroutine.
package tidal

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
	"github.com/tidal-sched/tidal/shim/kube/pkg/convert"
	"github.com/tidal-sched/tidal/shim/kube/pkg/engineclient"
	"github.com/tidal-sched/tidal/shim/kube/pkg/leader"
	"github.com/tidal-sched/tidal/shim/kube/pkg/podgroup"
)

// Name is the plugin name used in KubeSchedulerConfiguration profiles.
const Name = "Tidal"

// Event reasons the plugin writes on pods (see docs/user-guide.md).
const (
	ReasonEngineUnreachable = "TidalEngineUnreachable"
	ReasonInvalidSpec       = "TidalInvalidSpec"
	ReasonRefused           = "TidalRefused"
	ReasonPreempting        = "TidalPreempting"
	ReasonGangReleased      = "TidalGangReleased"
	ReasonRuntimeLimit      = "TidalRuntimeLimitExceeded"
	ReasonNodeRefused       = "TidalPlannedNodeRefused"
)

// preEnqueueTimeout caps CheckPod: PreEnqueue runs under the scheduling queue's lock.
const preEnqueueTimeout = 500 * time.Millisecond

var (
	_ fwk.PreEnqueuePlugin  = (*Plugin)(nil)
	_ fwk.EnqueueExtensions = (*Plugin)(nil)
	_ fwk.PreFilterPlugin   = (*Plugin)(nil)
	_ fwk.FilterPlugin      = (*Plugin)(nil)
	_ fwk.ScorePlugin       = (*Plugin)(nil)
	_ fwk.ReservePlugin     = (*Plugin)(nil)
	_ fwk.PermitPlugin      = (*Plugin)(nil)
	_ fwk.PostFilterPlugin  = (*Plugin)(nil)
	_ fwk.PostBindPlugin    = (*Plugin)(nil)
)

// Plugin is one profile's instance. Instances of several profiles share one engine client (one
// Sync stream) per engine address.
type Plugin struct {
	handle  fwk.Handle
	client  *engineclient.Client
	args    Args
	profile string
	logger  klog.Logger
	pods    corelisters.PodLister
	nodes   corelisters.NodeLister
	pdbs    policylisters.PodDisruptionBudgetLister // whether a victim's namespace has PDBs (evict.go)

	disruptions *disruptionPoller // shared by the client's profiles (disruptions.go)

	mu       sync.Mutex
	held     map[types.UID]*v1.Pod   // gated by PreEnqueue: gang incomplete or pod not synced yet
	rejected map[types.UID]rejection // refused by the engine at PreFilter (or its plan broke)
	waiting  map[types.UID]string    // in Permit: pod -> gang
	reported map[types.UID]string    // last event reason+note written per pod (no repeats)

	// Members held as incomplete, since when (incomplete.go: one event each once they wait long).
	incomplete map[types.UID]*incompleteMember

	// onSynced rounds, to catch one that ran while the engine call that held or refused a pod was
	// in flight (before the pod was recorded, so the round could not move it back): the last round
	// that named each namespace, freed capacity, changed nodes, or resynced.
	round, capacityRound, nodesRound, resyncRound uint64
	nsRound                                       map[string]uint64
}

type rejection struct {
	pod          *v1.Pod
	unresolvable bool // only a node change can help
}

// New is the plugin factory registered with app.WithPlugin.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	logger := klog.FromContext(ctx).WithValues("plugin", Name)
	args, err := DecodeArgs(obj)
	if err != nil {
		return nil, err
	}
	profile := ""
	if h != nil {
		profile = h.ProfileName()
	}
	cfg := args.clientConfig(profile)
	client, err := engineclient.Shared(cfg, logger)
	if err != nil {
		return nil, err
	}
	if client.Holder() != cfg.Holder {
		logger.Info("Tidal: this profile shares the engine client of an earlier profile, which claims the KUBERNETES door as its holder",
			"profile", profile, "holder", client.Holder(), "ignoredHolder", cfg.Holder)
	}
	p := &Plugin{
		handle: h, client: client, args: args, profile: profile, logger: logger,
		held: map[types.UID]*v1.Pod{}, incomplete: map[types.UID]*incompleteMember{}, rejected: map[types.UID]rejection{},
		waiting: map[types.UID]string{}, reported: map[types.UID]string{}, nsRound: map[string]uint64{},
	}
	if h != nil {
		if f := h.SharedInformerFactory(); f != nil {
			podInf := f.Core().V1().Pods()
			p.pods = podInf.Lister()
			p.nodes = f.Core().V1().Nodes().Lister()
			p.pdbs = f.Policy().V1().PodDisruptionBudgets().Lister()
			if cs := h.ClientSet(); cs != nil {
				// kube-scheduler's informer hides finished pods: a finish looks like a delete of a
				// running pod, which the client looks up (engineclient/ended.go).
				client.SetPodLookup(func(ctx context.Context, ns, name string) (*v1.Pod, error) {
					return cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
				})
				// The same informer hides the finished members of a gang an earlier scheduler bound
				// in part: a snapshot names those of namespaces with pending pods
				// (engineclient/finished.go), so a restarted engine counts them.
				client.SetFinishedLister(func(ctx context.Context, ns string) ([]*v1.Pod, error) {
					l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Succeeded", ResourceVersion: "0"})
					if err != nil {
						return nil, err
					}
					out := make([]*v1.Pod, 0, len(l.Items))
					for i := range l.Items {
						out = append(out, &l.Items[i])
					}
					return out, nil
				})
			}
			if err := client.Watch(f.Core().V1().Nodes().Informer(), podInf.Informer()); err != nil {
				return nil, err
			}
			if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: p.forgetDeleted}); err != nil {
				return nil, err
			}
			if err := podgroup.Watch(ctx, h, client.Refresh, logger); err != nil { // upstream PodGroups (pkg/podgroup)
				return nil, err
			}
			if err := watchAutoscalers(ctx, h, client, logger); err != nil { // HPAs for headroom (autoscalers.go)
				return nil, err
			}
		}
	}
	hooks := engineclient.Hooks{OnResync: p.onResync, OnSynced: p.onSynced, OnDisconnected: p.onDisconnected}
	if _, taken := nodeWarningWriters.LoadOrStore(client, p); !taken {
		hooks.OnNodeWarnings = p.onNodeWarnings // one profile per engine client writes node events
	}
	client.AddHooks(hooks)
	client.Start(ctx)
	if p.pods != nil {
		p.disruptions = pollDisruptions(ctx, client, p, time.Duration(args.DisruptionIntervalMs)*time.Millisecond,
			time.Duration(args.OverdueIntervalMs)*time.Millisecond, logger)
		pollActivations(ctx, client, p, time.Duration(args.ActivationIntervalMs)*time.Millisecond, logger)
		go p.sweepIncompleteEvery(ctx, time.Duration(args.IncompleteEventMs)*time.Millisecond) // incomplete.go
	}
	logger.Info("Tidal plugin initialized", "profile", p.profile, "engine", args.EngineAddress, "timeoutMs", args.TimeoutMs,
		"holder", client.Holder())
	return p, nil
}

// Name implements fwk.Plugin.
func (p *Plugin) Name() string { return Name }

// --- bookkeeping and hooks ---------------------------------------------------------------------------

func (p *Plugin) forgetDeleted(obj interface{}) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	p.mu.Lock()
	delete(p.held, pod.UID)
	p.forgetIncompleteLocked(pod.UID)
	delete(p.rejected, pod.UID)
	delete(p.waiting, pod.UID)
	delete(p.reported, pod.UID)
	p.mu.Unlock()
}

// onSynced runs after the engine acknowledged a Sync batch: it moves back the pods whose answer may
// have changed now that the engine knows more.
func (p *Plugin) onSynced(info engineclient.SyncedInfo) {
	if p.handle == nil {
		return
	}
	p.mu.Lock()
	p.round++
	for ns := range info.PendingPodNamespaces {
		p.nsRound[ns] = p.round
	}
	if info.CapacityFreed {
		p.capacityRound = p.round
	}
	if info.NodesChanged {
		p.nodesRound = p.round
	}
	if info.Resync {
		p.resyncRound = p.round
	}
	p.mu.Unlock()
	if info.Resync {
		// Retry every pending pod of this profile against the rebuilt engine.
		pending := p.pendingPods()
		p.logger.Info("tidal-engine synced: retrying pending pods", "profile", p.profile, "pending", len(pending))
		p.activate(pending, "resync")
		return
	}
	// Each held or refused pod gets one such retry per refusal (it is forgotten here and recorded
	// again if the engine still says no), so a busy cluster does not spin a pod that keeps failing.
	batch := map[string]*v1.Pod{}
	p.mu.Lock()
	// A new unbound pod may complete a gang: its namespace's held pods (and those the engine
	// refused, maybe for want of that member) get another try.
	for uid, pod := range p.held {
		if _, ok := info.PendingPodNamespaces[pod.Namespace]; ok {
			batch[key(pod)] = pod
			delete(p.held, uid)
		}
	}
	for uid, r := range p.rejected {
		_, sameNS := info.PendingPodNamespaces[r.pod.Namespace]
		if (sameNS && !r.unresolvable) || (info.CapacityFreed && !r.unresolvable) || info.NodesChanged {
			batch[key(r.pod)] = r.pod
			delete(p.rejected, uid)
		}
	}
	p.mu.Unlock()
	p.activate(batch, "synced")
}

// onResync runs when a new Sync stream's snapshot is acknowledged, before the client reports
// Synced: the engine rebuilt its state from the snapshot and holds no plans, so pods waiting in
// Permit wait for plans that no longer exist. They are released (Unreserve, requeue).
func (p *Plugin) onResync(info engineclient.SyncedInfo) {
	if p.handle == nil {
		return
	}
	why := "tidal-engine resynced"
	if info.EngineRestarted {
		why = "tidal-engine restarted (epoch " + info.Epoch + ")"
	}
	released := p.rejectWaiting(func(*v1.Pod) bool { return true }, why+": the gang's plan is gone; it will be planned again")
	p.logger.Info("tidal-engine resync: released the pods waiting in Permit", "profile", p.profile,
		"engineRestarted", info.EngineRestarted, "epoch", info.Epoch, "releasedFromPermit", len(released))
}

// nodeWarningWriters: the one plugin instance per engine client that writes node events.
var nodeWarningWriters sync.Map

// onNodeWarnings writes the engine's caveats about nodes as Warning events on the nodes (only the
// first profile's instance on a client does, so several profiles do not repeat them).
func (p *Plugin) onNodeWarnings(ws []*tidalv1.NodeWarning) {
	if p.handle == nil || p.handle.EventRecorder() == nil || p.nodes == nil || !leader.Leading() {
		return // a standby replica writes nothing (the leader's engine reports the same nodes)
	}
	for _, w := range ws {
		n, err := p.nodes.Get(w.GetNode())
		if err != nil {
			continue
		}
		p.handle.EventRecorder().Eventf(n, nil, v1.EventTypeWarning, w.GetReason(), "Topology", "%s", w.GetMessage())
	}
}

func (p *Plugin) onDisconnected(err error) {
	if _, refused := engineclient.DoorHeld(err); refused {
		return // another holder has the door: the engine client logs that (throttled)
	}
	p.logger.Info("tidal-engine Sync stream lost; pods stay pending until it is back", "engine", p.args.EngineAddress, "err", err)
}

func (p *Plugin) pendingPods() map[string]*v1.Pod {
	out := map[string]*v1.Pod{}
	if p.pods == nil {
		return out
	}
	all, err := p.pods.List(labels.Everything())
	if err != nil {
		return out
	}
	for _, pod := range all {
		if pod.Spec.NodeName == "" && pod.Spec.SchedulerName == p.profile && pod.DeletionTimestamp == nil {
			out[key(pod)] = pod
		}
	}
	return out
}

func (p *Plugin) activate(pods map[string]*v1.Pod, why string) {
	if len(pods) == 0 || p.handle == nil {
		return
	}
	p.logger.V(4).Info("activating pods", "count", len(pods), "why", why)
	p.handle.Activate(p.logger, pods)
}

// activateRefs moves the named pods (gangs the engine planned ahead of the current pod, by fair
// share) to the active queue; pods this profile does not have pending (gone, replaced, bound,
// terminating, another scheduler's) are skipped. It returns the pods it activates ("ns/name").
func (p *Plugin) activateRefs(refs []*tidalv1.PodRef, why string) []string {
	if len(refs) == 0 || p.pods == nil {
		return nil
	}
	batch := map[string]*v1.Pod{}
	for _, r := range refs {
		pod, err := p.pods.Pods(r.GetNamespace()).Get(r.GetName())
		if err != nil || string(pod.UID) != r.GetUid() || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil ||
			pod.Spec.SchedulerName != p.profile {
			continue
		}
		batch[key(pod)] = pod
	}
	p.mu.Lock()
	for _, pod := range batch {
		delete(p.held, pod.UID)
		delete(p.rejected, pod.UID)
	}
	p.mu.Unlock()
	// From a goroutine: Activate takes the queue's lock, which this scheduling cycle may need.
	go p.activate(batch, why)
	out := make([]string, 0, len(batch))
	for k := range batch {
		out = append(out, k)
	}
	return out
}

// rejectWaiting rejects this profile's pods waiting in Permit that match.
func (p *Plugin) rejectWaiting(match func(*v1.Pod) bool, msg string) []*v1.Pod {
	var victims []fwk.WaitingPod
	p.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		if pod := wp.GetPod(); pod.Spec.SchedulerName == p.profile && match(pod) {
			victims = append(victims, wp)
		}
	})
	var out []*v1.Pod
	for _, wp := range victims {
		if wp.Reject(Name, msg) {
			out = append(out, wp.GetPod())
		}
	}
	return out
}

// rounds returns the onSynced round now: read it before an engine call whose answer may hold or
// refuse the pod, and pass it to hold/reject.
func (p *Plugin) rounds() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.round
}

// hold records a pod gated by PreEnqueue until a round names its namespace. If such a round ran
// since `before` (while the engine call was in flight), the pod is moved back at once instead:
// from a goroutine, because PreEnqueue runs under the queue's lock (the Activate waits for it,
// by when the gated pod is in the queue's unschedulable set).
func (p *Plugin) hold(pod *v1.Pod, before uint64) {
	p.mu.Lock()
	missed := p.nsRound[pod.Namespace] > before || p.resyncRound > before
	if !missed {
		p.held[pod.UID] = pod
	}
	p.mu.Unlock()
	if missed {
		go p.activate(map[string]*v1.Pod{key(pod): pod}, "synced during CheckPod")
	}
}

// reject records a pod the engine refused until a round that may change the answer; a round
// that already ran since `before` moves it back at once (Activate of a pod in its scheduling
// cycle requeues it when the cycle ends).
func (p *Plugin) reject(pod *v1.Pod, unresolvable bool, before uint64) {
	p.mu.Lock()
	delete(p.held, pod.UID)
	missed := p.resyncRound > before || p.nodesRound > before ||
		(!unresolvable && (p.nsRound[pod.Namespace] > before || p.capacityRound > before))
	if !missed {
		p.rejected[pod.UID] = rejection{pod: pod, unresolvable: unresolvable}
	}
	p.mu.Unlock()
	if missed {
		p.activate(map[string]*v1.Pod{key(pod): pod}, "synced during the engine call")
	}
}

func (p *Plugin) clear(uid types.UID) {
	p.mu.Lock()
	delete(p.held, uid)
	delete(p.rejected, uid)
	delete(p.reported, uid)
	p.mu.Unlock()
}

// event writes a pod event, once per distinct reason+note (PreEnqueue and PreFilter run often).
func (p *Plugin) event(pod *v1.Pod, eventType, reason, note string) {
	if p.handle == nil || p.handle.EventRecorder() == nil || !leader.Leading() {
		return // a standby replica writes nothing (and records nothing, so it reports once it leads)
	}
	p.mu.Lock()
	dup := p.reported[pod.UID] == reason+"\x00"+note
	p.reported[pod.UID] = reason + "\x00" + note
	p.mu.Unlock()
	if dup {
		return
	}
	p.handle.EventRecorder().Eventf(pod, nil, eventType, reason, "Scheduling", "%s", note)
}

func key(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }

// reasons renders an engine status for kube-scheduler (never empty).
func reasons(s *tidalv1.Status, fallback string) []string {
	if s == nil || len(s.GetReasons()) == 0 {
		return []string{fallback}
	}
	return s.GetReasons()
}

// gangKeys: the keys that name a gang, in the engine's order (engine/pod_keys.cc); a row's
// values are joined by "-". The upstream PodGroup (spec.schedulingGroup) comes right after row 0.
var gangKeys = [][]string{
	{"tidal.dev/gang"},
	{"scheduling.x-k8s.io/pod-group"},  // scheduler-plugins
	{"scheduling.k8s.io/group-name"},   // Volcano
	{"pod-group-name"},                 // KAI
	{"kueue.x-k8s.io/pod-group-name"},  // Kueue
	{"jobset.sigs.k8s.io/jobset-name"}, // JobSet
	{"leaderworkerset.sigs.k8s.io/name", "leaderworkerset.sigs.k8s.io/group-index"}, // LeaderWorkerSet
}

// gangOf is the gang a pod names itself (the same keys the engine reads; "" when none). It only
// narrows which held pods an added pod may complete; the engine decides.
func gangOf(pod *v1.Pod) string {
	for i, row := range gangKeys {
		if i == 1 {
			if pg := convert.PodGroupName(pod); pg != "" {
				return pg
			}
		}
		var vals []string
		for _, k := range row {
			v, ok := pod.Annotations[k]
			if !ok {
				v, ok = pod.Labels[k]
			}
			if !ok || v == "" {
				break
			}
			vals = append(vals, v)
		}
		if len(vals) == len(row) {
			return strings.Join(vals, "-")
		}
	}
	return ""
}

func joinRefs(refs []*tidalv1.PodRef) string {
	var b strings.Builder
	for i, r := range refs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s/%s", r.GetNamespace(), r.GetName())
	}
	return b.String()
}
