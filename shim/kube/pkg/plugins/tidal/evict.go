package tidal

// Evicting a workload whole: the one way the shim takes pods off their nodes, shared by
// PostFilter's preemption (preempt.go), the engine's disruption actions (disruptions.go) and
// runtime limits with an older engine (overdue.go).
//
// PodDisruptionBudgets: the Eviction API checks them pod by pod, so a gang covered by a PDB that
// allows fewer disruptions than its pods would lose one pod and keep the rest (broken, still
// holding its nodes). Before the first eviction the shim therefore checks every victim workload
// as a whole (pdbBlock): its running pods covered by each PDB of their namespace against that
// PDB's status.disruptionsAllowed. A workload that cannot go whole is not evicted at all; it is
// reported to the engine (EvictedRequest.protected_gangs). Evictions carry the pod's UID as a
// precondition, so a pod replaced under the same name is never evicted in its predecessor's place.
//
// Threading: called from the scheduling cycle (PostFilter) and from the disruption poller's
// goroutine; no state of its own. A namespace's PDBs are listed live through the clientset when it
// has any (disruptionsAllowed must be current); whether it has any is asked of the shared PDB
// lister first, so the usual victim, in a namespace without PDBs, costs no API call: a live list
// is a consistent read, about 85 ms on an idle cluster and seconds under load, and PostFilter runs
// in the scheduling cycle, where it held up every pending pod (8 preemptors took 5 s more than
// their victims' notice in the e2e case headroom). Pods come from the shared pod lister.
//
// A workload's pods are evicted (and given notice, notice.go) side by side, up to podWorkers at
// once, after its first eviction went through alone (evictWhole): one Eviction round trip is
// 15-100 ms, and one after another a 64-pod victim gang held the scheduling cycle for seconds.
// Each call's goroutines are joined before it returns.

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
)

// podWorkers: how many of one workload's pod API calls (evictions, notice patches) run at once.
const podWorkers = 16

// eachOf runs fn(i) for every i in [0, n), up to limit at once, and returns when all are done.
func eachOf(n, limit int, fn func(i int)) {
	var g errgroup.Group
	g.SetLimit(limit)
	for i := 0; i < n; i++ {
		g.Go(func() error { fn(i); return nil })
	}
	_ = g.Wait() // fn reports its own failures
}

// errNotTried: evictWhole did not evict this pod (the workload's first eviction was refused).
var errNotTried = fmt.Errorf("not evicted: the workload's first eviction was refused")

// evictWhole evicts the pods of one workload and returns each one's result (nil: evicted;
// NotFound: gone already). The first eviction that finds its pod goes alone: if the Eviction API
// refuses it (429: a budget changed since pdbBlocked), nothing else is tried (errNotTried) and
// refusedAt is its index, so the workload stays whole (else -1). The rest then go side by side.
func (p *Plugin) evictWhole(ctx context.Context, refs []*tidalv1.PodRef) (errs []error, refusedAt int) {
	errs = make([]error, len(refs))
	first := 0
	for ; first < len(refs); first++ {
		errs[first] = p.evictPod(ctx, refs[first])
		if !apierrors.IsNotFound(errs[first]) {
			break
		}
	}
	if first < len(refs) && apierrors.IsTooManyRequests(errs[first]) {
		for i := first + 1; i < len(refs); i++ {
			errs[i] = errNotTried
		}
		return errs, first
	}
	if rest := first + 1; rest < len(refs) {
		eachOf(len(refs)-rest, podWorkers, func(i int) { errs[rest+i] = p.evictPod(ctx, refs[rest+i]) })
	}
	return errs, -1
}

// victimGang is one workload to evict whole or not at all (a gang, or a lone pod). noticeSeconds
// > 0 (PostFilter only): it checkpoints on notice and is told first (notice.go), evicted later.
type victimGang struct {
	id                          string
	pods                        []*tidalv1.PodRef
	queue                       string // the engine's name for its queue ("" unknown)
	noticeSeconds, deadlineUnix int64
	// slurm: a Slurm job, requeued by tidal-slurm (the engine hands it the disruption); the shim
	// neither checks budgets for it nor evicts it.
	slurm bool
}

// livePod is the pod a ref names as the pod lister has it; nil when it is gone, replaced (another
// UID) or already terminating (evicting it again would only repeat the event).
func (p *Plugin) livePod(r *tidalv1.PodRef) *v1.Pod {
	if p.pods == nil {
		return nil
	}
	pod, err := p.pods.Pods(r.GetNamespace()).Get(r.GetName())
	if err != nil || (r.GetUid() != "" && string(pod.UID) != r.GetUid()) || pod.DeletionTimestamp != nil {
		return nil
	}
	return pod
}

// evictPod asks the Eviction API to evict one pod (PDBs apply), with its UID as a precondition.
func (p *Plugin) evictPod(ctx context.Context, v *tidalv1.PodRef) error {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: v.GetNamespace(), Name: v.GetName()}}
	if v.GetUid() != "" {
		uid := types.UID(v.GetUid())
		ev.DeleteOptions = &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	}
	return p.handle.ClientSet().PolicyV1().Evictions(v.GetNamespace()).Evict(ctx, ev)
}

// reportEvicted tells the engine what was evicted (its preemption and disruption metrics count
// these) and which victim workloads PDBs protect; nothing when req names neither. Not fatal: an
// engine without the RPC answers Unimplemented.
func (p *Plugin) reportEvicted(ctx context.Context, req *tidalv1.EvictedRequest) {
	if len(req.GetPods()) == 0 && len(req.GetProtectedGangs()) == 0 {
		return
	}
	if _, err := p.client.Evicted(context.WithoutCancel(ctx), req); err != nil {
		p.logger.V(2).Info("Evicted not delivered", "preemptor", req.GetPreemptor().GetNamespace()+"/"+req.GetPreemptor().GetName(),
			"disruption", req.GetDisruption(), "err", err)
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
			if _, ok := pdbs[ns]; !ok && !p.mayHavePDBs(ns) {
				pdbs[ns] = nil
			} else if !ok {
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

// mayHavePDBs: the namespace has a PodDisruptionBudget by the shared lister, or there is no lister
// (or it failed) to say it has none.
func (p *Plugin) mayHavePDBs(ns string) bool {
	if p.pdbs == nil {
		return true
	}
	l, err := p.pdbs.PodDisruptionBudgets(ns).List(labels.Everything())
	return err != nil || len(l) > 0
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
