package tidal

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
	"github.com/tidal-sched/tidal/shim/kube/pkg/convert"
	"github.com/tidal-sched/tidal/shim/kube/pkg/engineclient"
)

const (
	planKey        fwk.StateKey = Name + "/plan"
	unreachableKey fwk.StateKey = Name + "/unreachable"
)

// planState is what PreFilter learned for this pod's cycle.
type planState struct {
	node, gang, domain string
}

func (s *planState) Clone() fwk.StateData { return s }

type unreachableState struct{}

func (s unreachableState) Clone() fwk.StateData { return s }

func readPlan(state fwk.CycleState) (*planState, error) {
	d, err := state.Read(planKey)
	if err != nil {
		return nil, fmt.Errorf("%s: no plan in the cycle state (PreFilter did not run): %w", Name, err)
	}
	ps, ok := d.(*planState)
	if !ok {
		return nil, fmt.Errorf("%s: cycle state %q holds %T", Name, planKey, d)
	}
	return ps, nil
}

func gangInState(state fwk.CycleState) string {
	if ps, err := readPlan(state); err == nil {
		return ps.gang
	}
	return ""
}

// --- PreEnqueue + EnqueueExtensions -------------------------------------------------------------------

// PreEnqueue asks the engine whether the pod's gang is complete enough to try, and whether its
// tidal.dev/* labels and annotations are valid.
func (p *Plugin) PreEnqueue(ctx context.Context, pod *v1.Pod) *fwk.Status {
	if !p.client.Synced() {
		// The engine is away (or not synced yet): PreFilter reports it on the pod; the resync that
		// follows the engine's return activates every pending pod.
		return nil
	}
	before := p.rounds()
	resp, err := p.client.CheckPod(ctx, convert.PodRef(pod), preEnqueueTimeout)
	if err != nil {
		return nil // PreFilter will meet the same failure and report it
	}
	st := resp.GetStatus()
	switch st.GetCode() {
	case tidalv1.Status_SUCCESS:
		p.mu.Lock()
		delete(p.held, pod.UID)
		p.forgetIncompleteLocked(pod.UID)
		p.mu.Unlock()
		return nil
	case tidalv1.Status_WAIT, tidalv1.Status_UNSCHEDULABLE:
		// Gang incomplete, or the engine has not seen this pod yet: held until the engine
		// acknowledges more members (onSynced) or a pod event says so (EventsToRegister). A member
		// held as incomplete for long gets an event (incomplete.go).
		msg := reasons(st, "gang incomplete")
		if st.GetCode() == tidalv1.Status_WAIT {
			p.noteIncomplete(pod, joinStrings(msg), time.Now())
		}
		p.hold(pod, before)
		return fwk.NewStatus(fwk.Unschedulable, msg...)
	case tidalv1.Status_UNSCHEDULABLE_AND_UNRESOLVABLE:
		p.mu.Lock()
		p.forgetIncompleteLocked(pod.UID)
		p.mu.Unlock()
		p.hold(pod, before)
		reason := ReasonRefused
		if st.GetPlugin() == "podspec" {
			reason = ReasonInvalidSpec
		}
		msg := reasons(st, "refused by tidal-engine")
		p.event(pod, v1.EventTypeWarning, reason, joinStrings(msg))
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg...)
	default:
		return nil // ERROR: PreFilter asks again and reports it
	}
}

// EventsToRegister: pods held or refused by Tidal may be helped by another member of their gang
// being added, by their own labels/annotations changing, by bound pods going away and by nodes.
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Add | fwk.Delete | fwk.Update}, QueueingHintFn: p.podHint},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable | fwk.UpdateNodeLabel |
			fwk.UpdateNodeTaint | fwk.UpdateNodeCondition}, QueueingHintFn: p.nodeHint},
	}, nil
}

func (p *Plugin) podHint(_ klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	oldPod, _ := oldObj.(*v1.Pod)
	newPod, _ := newObj.(*v1.Pod)
	switch {
	case newPod != nil && newPod.UID == pod.UID:
		return fwk.Queue, nil // the pod itself changed (e.g. a fixed annotation)
	case oldPod != nil && newPod == nil:
		if oldPod.Spec.NodeName != "" {
			return fwk.Queue, nil // a bound pod went away: capacity
		}
		return fwk.QueueSkip, nil
	case newPod != nil && oldPod == nil:
		// A new pod of the same gang may complete it.
		if newPod.Spec.NodeName == "" && newPod.Namespace == pod.Namespace && gangOf(pod) != "" && gangOf(newPod) == gangOf(pod) {
			return fwk.Queue, nil
		}
		return fwk.QueueSkip, nil
	case newPod != nil && oldPod != nil && newPod.Spec.NodeName != "":
		if newPod.Status.Phase == v1.PodSucceeded || newPod.Status.Phase == v1.PodFailed {
			return fwk.Queue, nil
		}
	}
	return fwk.QueueSkip, nil
}

func (p *Plugin) nodeHint(klog.Logger, *v1.Pod, interface{}, interface{}) (fwk.QueueingHint, error) {
	return fwk.Queue, nil
}

// --- PreFilter / Filter / Score ---------------------------------------------------------------------

// PreFilter asks the engine for this pod's node in its gang's plan (the first member makes the
// plan for all).
func (p *Plugin) PreFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if !p.client.Synced() {
		// At start-up the first snapshot is a moment away: wait for it briefly. Once a stream has
		// failed, fail at once: a scheduling cycle blocked here would stall every other pod too.
		why := p.client.LastError()
		if why == nil {
			wctx, cancel := context.WithTimeout(ctx, min(p.client.Timeout(), 2*time.Second))
			if err := p.client.WaitSynced(wctx); err != nil {
				why = fmt.Errorf("Sync stream not established: %w", err)
			}
			cancel()
		}
		if why != nil {
			return nil, p.unreachable(state, pod, why)
		}
	}
	before := p.rounds()
	resp, err := p.client.PlanPod(ctx, convert.PodRef(pod))
	if err != nil {
		return nil, p.unreachable(state, pod, err)
	}
	p.activateRefs(resp.GetActivate(), "planned ahead by fair share")
	st := resp.GetStatus()
	switch st.GetCode() {
	case tidalv1.Status_SUCCESS:
		if resp.GetNodeName() == "" {
			return nil, fwk.NewStatus(fwk.Error, "tidal-engine planned no node for the pod")
		}
		state.Write(planKey, &planState{node: resp.GetNodeName(), gang: resp.GetGang(), domain: resp.GetDomain()})
		p.clear(pod.UID)
		return &fwk.PreFilterResult{NodeNames: sets.New(resp.GetNodeName())}, nil
	case tidalv1.Status_UNSCHEDULABLE_AND_UNRESOLVABLE:
		p.reject(pod, true, before)
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, reasons(st, "refused by tidal-engine")...)
	case tidalv1.Status_ERROR:
		return nil, fwk.NewStatus(fwk.Error, reasons(st, "tidal-engine error")...)
	default: // UNSCHEDULABLE, WAIT
		p.reject(pod, false, before)
		return nil, fwk.NewStatus(fwk.Unschedulable, reasons(st, "no room in the cluster for the gang")...)
	}
}

func (p *Plugin) unreachable(state fwk.CycleState, pod *v1.Pod, err error) *fwk.Status {
	state.Write(unreachableKey, unreachableState{})
	p.reject(pod, false, p.rounds()) // the resync after the engine's return moves it back
	msg := p.client.Describe(err) + "; the pod stays pending and is retried when the engine is back"
	if _, held := engineclient.DoorHeld(err); held {
		msg = p.client.Describe(err) + "; the pod stays pending and is retried once this scheduler holds the door"
	}
	p.event(pod, v1.EventTypeWarning, ReasonEngineUnreachable, msg)
	return fwk.NewStatus(fwk.Unschedulable, msg)
}

// PreFilterExtensions: none (the engine accounts for other pods itself).
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter passes only the node the engine planned for the pod.
func (p *Plugin) Filter(_ context.Context, state fwk.CycleState, _ *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	ps, err := readPlan(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if ni.Node() != nil && ni.Node().Name == ps.node {
		return nil
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "not the node tidal-engine planned for the pod ("+ps.node+")")
}

// Score gives the planned node the maximum.
func (p *Plugin) Score(_ context.Context, state fwk.CycleState, _ *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	ps, err := readPlan(state)
	if err != nil {
		return 0, fwk.AsStatus(err)
	}
	if ni.Node() != nil && ni.Node().Name == ps.node {
		return fwk.MaxNodeScore, nil
	}
	return 0, nil
}

// ScoreExtensions: none.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }

// --- Reserve / Unreserve / Permit / PostBind ----------------------------------------------------------

// Reserve claims the member's slot in its gang's plan.
func (p *Plugin) Reserve(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	if err := p.streamDown(); err != nil {
		return fwk.NewStatus(fwk.Error, p.client.Describe(err))
	}
	resp, err := p.client.Reserve(ctx, convert.PodRef(pod), nodeName)
	if err != nil {
		return fwk.NewStatus(fwk.Error, p.client.Describe(err))
	}
	st := resp.GetStatus()
	switch st.GetCode() {
	case tidalv1.Status_SUCCESS:
		return nil
	case tidalv1.Status_ERROR:
		return fwk.NewStatus(fwk.Error, reasons(st, "tidal-engine refused the reservation")...)
	default:
		return fwk.NewStatus(fwk.Unschedulable, reasons(st, "tidal-engine refused the reservation")...)
	}
}

// Unreserve releases the whole gang's plan (engine), rejects the members still waiting in Permit
// and sends them all back to the queue. It must also work while the engine is unreachable: then
// the members this scheduler knows to be waiting are rejected.
func (p *Plugin) Unreserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, _ string) {
	p.release(ctx, pod, gangInState(state), fmt.Sprintf("gang plan released: member %s was unreserved", key(pod)))
}

func (p *Plugin) release(ctx context.Context, pod *v1.Pod, gang, why string) {
	ctx = context.WithoutCancel(ctx)
	p.mu.Lock()
	delete(p.waiting, pod.UID)
	members := sets.New[types.UID]()
	if gang != "" {
		for uid, g := range p.waiting {
			if g == gang {
				members.Insert(uid)
			}
		}
	}
	p.mu.Unlock()
	// While the Sync stream is down the engine is gone or will drop every plan at the resync:
	// nothing to tell it, release locally.
	var resp *tidalv1.UnreserveResponse
	err := p.streamDown()
	if err == nil {
		resp, err = p.client.Unreserve(ctx, convert.PodRef(pod))
	}
	if err != nil {
		why += " (" + p.client.Describe(err) + ")"
	}
	for _, r := range resp.GetReleased() {
		members.Insert(types.UID(r.GetUid()))
	}
	members.Delete(pod.UID)
	rejected := p.rejectWaiting(func(w *v1.Pod) bool { return members.Has(w.UID) }, why)
	if len(rejected) > 0 {
		p.logger.V(2).Info("released gang members waiting in Permit", "gang", gang, "pods", len(rejected), "why", why)
	}
	// No Activate here: the released members come back through kube-scheduler's backoff (each one's
	// release is an AssignedPodDelete event for the others). Activating them at once would skip the
	// backoff, and a gang whose plans keep colliding with members still being forgotten would spin.
}

// Permit lets the pod bind only when the engine says its whole gang is reserved; then it allows
// every waiting member at once.
func (p *Plugin) Permit(ctx context.Context, state fwk.CycleState, pod *v1.Pod, _ string) (*fwk.Status, time.Duration) {
	if err := p.streamDown(); err != nil {
		return fwk.NewStatus(fwk.Unschedulable, p.client.Describe(err)), 0
	}
	resp, err := p.client.Permit(ctx, convert.PodRef(pod))
	if err != nil {
		return fwk.NewStatus(fwk.Unschedulable, p.client.Describe(err)), 0
	}
	st := resp.GetStatus()
	switch st.GetCode() {
	case tidalv1.Status_WAIT:
		timeout := time.Duration(resp.GetWaitTimeoutMs()) * time.Millisecond
		if timeout <= 0 {
			timeout = time.Minute
		}
		p.mu.Lock()
		p.waiting[pod.UID] = gangInState(state)
		p.mu.Unlock()
		return fwk.NewStatus(fwk.Wait, reasons(st, "waiting for the rest of the gang")...), timeout
	case tidalv1.Status_SUCCESS:
		// All or nothing: if a member the engine counts as reserved is no longer waiting (it timed
		// out or was deleted a moment ago), allow none; Unreserve then releases the plan.
		var allow []fwk.WaitingPod
		for _, r := range resp.GetAllow() {
			if types.UID(r.GetUid()) == pod.UID {
				continue
			}
			wp := p.handle.GetWaitingPod(types.UID(r.GetUid()))
			if wp == nil {
				return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("gang member %s/%s is no longer waiting in Permit; the gang is planned again",
					r.GetNamespace(), r.GetName())), 0
			}
			allow = append(allow, wp)
		}
		p.mu.Lock()
		for _, wp := range allow {
			delete(p.waiting, wp.GetPod().UID)
		}
		p.mu.Unlock()
		for _, wp := range allow {
			wp.Allow(Name)
		}
		return nil, 0
	case tidalv1.Status_ERROR:
		return fwk.NewStatus(fwk.Error, reasons(st, "tidal-engine error")...), 0
	default:
		return fwk.NewStatus(fwk.Unschedulable, reasons(st, "tidal-engine refused the gang")...), 0
	}
}

// PostBind tells the engine where the pod was bound.
func (p *Plugin) PostBind(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, nodeName string) {
	p.mu.Lock()
	delete(p.waiting, pod.UID)
	p.mu.Unlock()
	p.clear(pod.UID)
	if _, err := p.client.Bound(context.WithoutCancel(ctx), convert.PodRef(pod), nodeName); err != nil {
		// Not fatal: the binding reaches the engine through the Sync stream as well.
		p.logger.V(2).Info("Bound not delivered", "pod", klog.KObj(pod), "node", nodeName, "err", err)
	}
}

// streamDown returns why the engine is away when the Sync stream is not up (nil when it is).
func (p *Plugin) streamDown() error {
	if p.client.Synced() {
		return nil
	}
	if err := p.client.LastError(); err != nil {
		return err
	}
	return fmt.Errorf("Sync stream not established")
}

// --- PostFilter ---------------------------------------------------------------------------------------

// PostFilter runs when the pod found no node. If PreFilter had a plan, kube-scheduler's own filters
// refused the planned node: the plan is released so that the engine plans again. Then the engine
// is asked for victims; the shim evicts them, each victim workload whole or not at all (preempt.go).
func (p *Plugin) PostFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	if _, err := state.Read(unreachableKey); err == nil {
		return nil, fwk.NewStatus(fwk.Unschedulable, "tidal-engine unreachable: no preemption")
	}
	if ps, err := readPlan(state); err == nil {
		before := p.rounds()
		p.reportRefusal(ctx, pod, ps.node, statuses)
		p.release(ctx, pod, ps.gang, fmt.Sprintf("gang plan released: planned node %s failed kube-scheduler's filters for %s", ps.node, key(pod)))
		// The engine plans again without the refused node: the pod may go back at once.
		p.reject(pod, false, before)
		p.activate(map[string]*v1.Pod{key(pod): pod}, "planned node refused")
	}
	return p.preempt(ctx, pod) // preempt.go: victims, PodDisruptionBudgets, evictions
}

// reportRefusal tells the engine which of kube-scheduler's filters refused the planned node, so
// the gang's next plan excludes it (never the same refused node twice).
func (p *Plugin) reportRefusal(ctx context.Context, pod *v1.Pod, node string, statuses fwk.NodeToStatusReader) {
	plugin, why := "", []string(nil)
	if statuses != nil {
		if st := statuses.Get(node); st != nil {
			plugin, why = st.Plugin(), st.Reasons()
		}
	}
	if plugin == Name {
		return // Tidal's own Filter: not a refusal by another plugin
	}
	if _, err := p.client.NodeRefused(context.WithoutCancel(ctx), convert.PodRef(pod), node, plugin, why); err != nil {
		p.logger.V(2).Info("NodeRefused not delivered", "pod", klog.KObj(pod), "node", node, "err", err)
	}
	p.event(pod, v1.EventTypeNormal, ReasonNodeRefused,
		fmt.Sprintf("planned node %s refused by %s (%s): tidal-engine plans the gang again without it", node, orUnknown(plugin), joinStrings(why)))
}

func orUnknown(s string) string {
	if s == "" {
		return "a kube-scheduler filter"
	}
	return s
}

func joinStrings(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += "; "
		}
		out += s
	}
	return out
}
