package tidal

// PostFilter's preemption: the engine chooses victims (Preempt); the shim evicts them, a victim
// workload (a gang, or a lone pod) whole or not at all, and reports what it did (Evicted).
//
// PodDisruptionBudgets: the Eviction API checks them pod by pod, so a gang covered by a PDB that
// allows fewer disruptions than its pods would lose one pod and keep the rest (broken, still
// holding its nodes). Before the first eviction the shim therefore checks every victim workload
// as a whole (pdbBlock): its running pods covered by each PDB of their namespace against that
// PDB's status.disruptionsAllowed. A workload that cannot go whole is not evicted at all; it is
// reported to the engine (EvictedRequest.protected_gangs), which then leaves it out, and the
// engine is asked again, up to maxPreemptRounds times in one PostFilter.
//
// Threading: runs in kube-scheduler's scheduling cycle (one pod at a time). PDBs are listed live
// through the clientset (preemption is rare, and disruptionsAllowed must be current); victim pods
// come from the shared pod lister. p.event takes p.mu.

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
	"github.com/tidal-sched/tidal/shim/kube/pkg/convert"
)

// ReasonPreemptionBlocked: a pod event naming victims that PDBs do not allow evicting whole.
const ReasonPreemptionBlocked = "TidalPreemptionBlocked"

// maxPreemptRounds bounds how often one PostFilter asks the engine again after PDBs refused its
// victims (each round the engine leaves the refused workloads out).
const maxPreemptRounds = 4

// victimGang is one workload the engine chose: evicted whole or not at all.
type victimGang struct {
	id   string
	pods []*tidalv1.PodRef
}

func victimGangs(resp *tidalv1.PreemptResponse) []victimGang {
	var out []victimGang
	for _, g := range resp.GetVictimGangs() {
		out = append(out, victimGang{id: g.GetId(), pods: g.GetPods()})
	}
	if len(out) == 0 && len(resp.GetVictims()) > 0 {
		// An engine that does not group its victims: all of them as one (all or nothing).
		out = []victimGang{{pods: resp.GetVictims()}}
	}
	return out
}

// preempt is PostFilter after the plan bookkeeping: ask, check PDBs, evict, report.
func (p *Plugin) preempt(ctx context.Context, pod *v1.Pod) (*fwk.PostFilterResult, *fwk.Status) {
	ref := convert.PodRef(pod)
	var blocked []string
	for round := 0; round < maxPreemptRounds; round++ {
		resp, err := p.client.Preempt(ctx, ref)
		if err != nil {
			return nil, fwk.NewStatus(fwk.Unschedulable, p.client.Describe(err))
		}
		st := resp.GetStatus()
		if st.GetCode() != tidalv1.Status_SUCCESS || len(resp.GetVictims()) == 0 {
			// The engine's reason repeats why the pod does not fit (already in the PreFilter message
			// of the same FailedScheduling event): log it, keep the event short.
			p.logger.V(4).Info("no preemption", "pod", klog.KObj(pod), "code", st.GetCode(), "reasons", st.GetReasons())
			msg := "tidal-engine: no preemption victims"
			if len(blocked) > 0 {
				msg += " (PodDisruptionBudgets protect " + joinStrings(blocked) + ")"
			}
			return nil, fwk.NewStatus(fwk.Unschedulable, msg)
		}
		gangs := victimGangs(resp)
		why, err := p.pdbBlocked(ctx, gangs)
		if err != nil {
			// Unchecked, a gang might be broken by the Eviction API's per-pod checks: evict nothing.
			return nil, fwk.NewStatus(fwk.Unschedulable, "preemption: cannot check PodDisruptionBudgets: "+err.Error())
		}
		if len(why) == 0 {
			return p.evictGangs(ctx, pod, ref, resp, gangs)
		}
		ids := make([]string, 0, len(why))
		for id := range why {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		var notes []string
		for _, id := range ids {
			notes = append(notes, id+": "+why[id])
		}
		p.event(pod, v1.EventTypeNormal, ReasonPreemptionBlocked, "tidal-engine's victims are not evicted: "+joinStrings(notes))
		p.logger.V(2).Info("preemption: victims protected by PodDisruptionBudgets", "pod", klog.KObj(pod), "why", notes)
		p.reportEvicted(ctx, ref, nil, resp.GetReason(), ids)
		blocked = append(blocked, ids...)
	}
	return nil, fwk.NewStatus(fwk.Unschedulable, "tidal-engine: every victim it proposed is protected by PodDisruptionBudgets ("+
		joinStrings(blocked)+")")
}

// evictGangs evicts every pod of every victim workload. A workload whose first eviction is
// refused (429: a budget changed since the check) is left whole and reported protected.
func (p *Plugin) evictGangs(ctx context.Context, pod *v1.Pod, ref *tidalv1.PodRef, resp *tidalv1.PreemptResponse,
	gangs []victimGang) (*fwk.PostFilterResult, *fwk.Status) {
	var failed, refused []string
	var evicted []*tidalv1.PodRef
	for _, g := range gangs {
		for i, v := range g.pods {
			err := p.evictPod(ctx, v)
			switch {
			case err == nil:
				evicted = append(evicted, v)
				continue
			case apierrors.IsNotFound(err):
				continue // gone already
			}
			failed = append(failed, fmt.Sprintf("%s/%s: %v", v.GetNamespace(), v.GetName(), err))
			if i == 0 && apierrors.IsTooManyRequests(err) && g.id != "" {
				refused = append(refused, g.id)
				break
			}
		}
	}
	p.reportEvicted(ctx, ref, evicted, resp.GetReason(), refused)
	// nominated_node names a node; a value that is not one of the cluster's nodes (e.g. a topology
	// domain such as "block-0/leaf-2": a gang's victims span several nodes) is only reported.
	where, nominate := resp.GetNominatedNode(), ""
	if where != "" && p.nodes != nil {
		if _, err := p.nodes.Get(where); err == nil {
			nominate = where
		}
	}
	note := fmt.Sprintf("tidal-engine preempts %s for this pod", joinRefs(resp.GetVictims()))
	if where != "" {
		note += " (" + where + ")"
	}
	p.event(pod, v1.EventTypeNormal, ReasonPreempting, note)
	if len(failed) > 0 {
		return nil, fwk.NewStatus(fwk.Unschedulable, "eviction failed: "+joinStrings(failed))
	}
	res := &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{NominatingMode: fwk.ModeNoop}}
	if nominate != "" {
		res.NominatingInfo = &fwk.NominatingInfo{NominatedNodeName: nominate, NominatingMode: fwk.ModeOverride}
	}
	return res, fwk.NewStatus(fwk.Success)
}

func (p *Plugin) evictPod(ctx context.Context, v *tidalv1.PodRef) error {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: v.GetNamespace(), Name: v.GetName()}}
	if v.GetUid() != "" {
		uid := types.UID(v.GetUid())
		ev.DeleteOptions = &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	}
	return p.handle.ClientSet().PolicyV1().Evictions(v.GetNamespace()).Evict(ctx, ev)
}

// reportEvicted tells the engine what was evicted (the preemption metric counts these) and which
// victim workloads PDBs protect. Not fatal: an engine without the RPC answers Unimplemented.
func (p *Plugin) reportEvicted(ctx context.Context, ref *tidalv1.PodRef, pods []*tidalv1.PodRef, reason string, protected []string) {
	if len(pods) == 0 && len(protected) == 0 {
		return
	}
	req := &tidalv1.EvictedRequest{Preemptor: ref, Pods: pods, Reason: reason, ProtectedGangs: protected}
	if _, err := p.client.Evicted(context.WithoutCancel(ctx), req); err != nil {
		p.logger.V(2).Info("Evicted not delivered", "preemptor", ref.GetNamespace()+"/"+ref.GetName(), "err", err)
	}
}

// pdbBlocked returns, per victim workload that PDBs do not allow evicting whole, why.
func (p *Plugin) pdbBlocked(ctx context.Context, gangs []victimGang) (map[string]string, error) {
	pdbs := map[string][]*policyv1.PodDisruptionBudget{}
	out := map[string]string{}
	for i, g := range gangs {
		var pods []*v1.Pod
		for _, r := range g.pods {
			ns := r.GetNamespace()
			if _, ok := pdbs[ns]; !ok {
				list, err := p.handle.ClientSet().PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					return nil, fmt.Errorf("list PodDisruptionBudgets in %s: %w", ns, err)
				}
				pdbs[ns] = nil
				for j := range list.Items {
					pdbs[ns] = append(pdbs[ns], &list.Items[j])
				}
			}
			if len(pdbs[ns]) == 0 {
				continue
			}
			if pod := p.victimPod(ctx, r); pod != nil {
				pods = append(pods, pod)
			}
		}
		var all []*policyv1.PodDisruptionBudget
		seen := map[string]bool{}
		for _, pod := range pods {
			if !seen[pod.Namespace] {
				seen[pod.Namespace] = true
				all = append(all, pdbs[pod.Namespace]...)
			}
		}
		if why := pdbBlock(pods, all); why != "" {
			id := g.id
			if id == "" {
				id = fmt.Sprintf("victims#%d", i)
			}
			out[id] = why
		}
	}
	return out, nil
}

// victimPod is the victim's Pod (lister first, then the API); nil when it is gone or replaced.
func (p *Plugin) victimPod(ctx context.Context, r *tidalv1.PodRef) *v1.Pod {
	var pod *v1.Pod
	if p.pods != nil {
		pod, _ = p.pods.Pods(r.GetNamespace()).Get(r.GetName())
	}
	if pod == nil {
		got, err := p.handle.ClientSet().CoreV1().Pods(r.GetNamespace()).Get(ctx, r.GetName(), metav1.GetOptions{})
		if err != nil {
			return nil
		}
		pod = got
	}
	if r.GetUid() != "" && string(pod.UID) != r.GetUid() {
		return nil
	}
	return pod
}

// pdbBlock says why PodDisruptionBudgets do not allow evicting all of `pods` at once ("" when they
// do), judging as the Eviction API does: pods not running, or already being deleted, are evicted
// without a budget; every other pod needs one disruption of each PDB that selects it; a pod
// selected by more than one PDB cannot be evicted at all; a PDB whose status is older than its
// spec refuses every eviction. policy/v1 selectors: nil selects nothing, {} everything.
func pdbBlock(pods []*v1.Pod, pdbs []*policyv1.PodDisruptionBudget) string {
	covered := map[*policyv1.PodDisruptionBudget]int32{}
	var order []*policyv1.PodDisruptionBudget
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil || pod.Status.Phase != v1.PodRunning {
			continue
		}
		var by []*policyv1.PodDisruptionBudget
		for _, pdb := range pdbs {
			if pdb.Namespace != pod.Namespace || pdb.Spec.Selector == nil {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
				continue
			}
			if pdb.Spec.UnhealthyPodEvictionPolicy != nil && *pdb.Spec.UnhealthyPodEvictionPolicy == policyv1.AlwaysAllow && !podReady(pod) {
				continue // an unhealthy pod is evicted without the budget
			}
			by = append(by, pdb)
		}
		if len(by) > 1 {
			return fmt.Sprintf("pod %s is selected by %d PodDisruptionBudgets (%s); the Eviction API refuses it",
				key(pod), len(by), pdbNames(by))
		}
		for _, pdb := range by {
			if _, ok := covered[pdb]; !ok {
				order = append(order, pdb)
			}
			covered[pdb]++
		}
	}
	for _, pdb := range order {
		n := covered[pdb]
		if pdb.Status.ObservedGeneration < pdb.Generation {
			return fmt.Sprintf("PodDisruptionBudget %s/%s is still being processed (status older than its spec)", pdb.Namespace, pdb.Name)
		}
		if pdb.Status.DisruptionsAllowed < n {
			return fmt.Sprintf("PodDisruptionBudget %s/%s allows %d disruption(s); the workload has %d pod(s) it covers",
				pdb.Namespace, pdb.Name, pdb.Status.DisruptionsAllowed, n)
		}
	}
	return ""
}

func podReady(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func pdbNames(pdbs []*policyv1.PodDisruptionBudget) string {
	names := make([]string, 0, len(pdbs))
	for _, pdb := range pdbs {
		names = append(names, pdb.Name)
	}
	return strings.Join(names, ", ")
}
