package tidal

// PostFilter's preemption: the engine chooses victims (Preempt); the shim evicts them, a victim
// workload (a gang, or a lone pod) whole or not at all, and reports what it did (Evicted).
//
// PodDisruptionBudgets are judged for each victim workload whole before the first eviction
// (evict.go). A workload that cannot go whole is not evicted at all; it is reported to the engine
// (EvictedRequest.protected_gangs), which then leaves it out, and the engine is asked again, up
// to maxPreemptRounds times in one PostFilter.
//
// Checkpoint on notice: a victim workload with VictimGang.notice_seconds > 0 is not evicted now.
// Its pods get the disruption notice (notice.go) and it counts as handled: PostFilter still
// nominates, the engine holds the capacity for the preemptor, and the disruption poller
// (disruptions.go) evicts it when the engine says so (a checkpoint reported, or the deadline).
//
// Events: the preemptor gets TidalPreempting ("preempts", or "reclaims ... from queue Q" for a
// quota reclaim); each pod evicted here gets a Warning TidalDisrupted on itself naming the cause,
// the preemptor and its queue (victimNote), as the pods the disruption poller evicts do. The queues
// are the engine's (PreemptResponse.queue, VictimGang.queue): the shim does not resolve queues.
//
// Slurm jobs: a victim workload on the Slurm door (VictimGang.door SLURM) is tidal-slurm's to
// requeue; the shim only names it in the Preempting event, and its pods are not in victims.
//
// Threading: runs in kube-scheduler's scheduling cycle (one pod at a time); victim pods come from
// the shared pod lister. p.event takes p.mu.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

func victimGangs(resp *tidalv1.PreemptResponse) []victimGang {
	var out []victimGang
	for _, g := range resp.GetVictimGangs() {
		out = append(out, victimGang{id: g.GetId(), pods: g.GetPods(), queue: g.GetQueue(),
			noticeSeconds: g.GetNoticeSeconds(), deadlineUnix: g.GetDeadlineUnix(), slurm: g.GetDoor() == tidalv1.FrontDoor_SLURM})
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
		if st.GetCode() != tidalv1.Status_SUCCESS || (len(resp.GetVictims()) == 0 && len(resp.GetVictimGangs()) == 0) {
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
		var ours []victimGang // the Kubernetes workloads: the Slurm jobs are not the API server's
		for _, g := range gangs {
			if !g.slurm {
				ours = append(ours, g)
			}
		}
		why, err := p.pdbBlocked(ctx, ours)
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
		p.reportEvicted(ctx, &tidalv1.EvictedRequest{Preemptor: ref, Reason: resp.GetReason(), ProtectedGangs: ids})
		blocked = append(blocked, ids...)
	}
	return nil, fwk.NewStatus(fwk.Unschedulable, "tidal-engine: every victim it proposed is protected by PodDisruptionBudgets ("+
		joinStrings(blocked)+")")
}

// evictGangs evicts every pod of every victim workload, except those that checkpoint on notice:
// their pods get the notice instead (the engine says when to evict them, disruptions.go). A
// workload whose first eviction is refused (429: a budget changed since the check) is left whole
// and reported protected.
func (p *Plugin) evictGangs(ctx context.Context, pod *v1.Pod, ref *tidalv1.PodRef, resp *tidalv1.PreemptResponse,
	gangs []victimGang) (*fwk.PostFilterResult, *fwk.Status) {
	// The workloads go side by side (up to actionWorkers), each with its pods side by side
	// (evictWhole): PostFilter holds the scheduling cycle until all are done.
	type outcome struct {
		evicted                   []*tidalv1.PodRef
		failed                    []string
		refused, noticed, requeue string
	}
	outs := make([]outcome, len(gangs))
	preemptor := key(pod)
	eachOf(len(gangs), actionWorkers, func(gi int) {
		vg, o := gangs[gi], &outs[gi]
		switch {
		case vg.slurm:
			o.requeue = orDefault(vg.id, joinRefs(vg.pods))
		case vg.noticeSeconds > 0:
			deadline := time.Unix(vg.deadlineUnix, 0)
			if vg.deadlineUnix <= 0 {
				deadline = time.Now().Add(time.Duration(vg.noticeSeconds) * time.Second)
			}
			p.notice(ctx, vg.pods, preemptionCause(resp.GetReason()), fmt.Sprintf("for %s (%s)", key(pod), resp.GetReason()), deadline)
			o.noticed = orDefault(vg.id, joinRefs(vg.pods))
		default:
			live := make([]*v1.Pod, len(vg.pods)) // before the eviction: the lister drops a terminating pod
			for i, r := range vg.pods {
				live[i] = p.livePod(r)
			}
			errs, at := p.evictWhole(ctx, vg.pods)
			note := victimNote(p.profile, resp.GetReason(), preemptor, resp.GetQueue(), vg.queue)
			for i, err := range errs {
				switch {
				case err == nil:
					o.evicted = append(o.evicted, vg.pods[i])
					p.event(eventPod(live[i], vg.pods[i]), v1.EventTypeWarning, ReasonDisrupted, note)
				case apierrors.IsNotFound(err), err == errNotTried:
					// gone already; or left whole after its first eviction was refused
				default:
					o.failed = append(o.failed, fmt.Sprintf("%s/%s: %v", vg.pods[i].GetNamespace(), vg.pods[i].GetName(), err))
				}
			}
			if at >= 0 && vg.id != "" {
				o.refused = vg.id
			}
		}
	})
	var failed, refused, noticed, requeued []string
	var evicted []*tidalv1.PodRef
	for _, o := range outs {
		evicted = append(evicted, o.evicted...)
		failed = append(failed, o.failed...)
		refused, noticed, requeued = appendNonEmpty(refused, o.refused), appendNonEmpty(noticed, o.noticed), appendNonEmpty(requeued, o.requeue)
	}
	p.reportEvicted(ctx, &tidalv1.EvictedRequest{Preemptor: ref, Pods: evicted, Reason: resp.GetReason(), ProtectedGangs: refused})
	// nominated_node names a node; a value that is not one of the cluster's nodes (e.g. a topology
	// domain such as "block-0/leaf-2": a gang's victims span several nodes) is only reported.
	where, nominate := resp.GetNominatedNode(), ""
	if where != "" && p.nodes != nil {
		if _, err := p.nodes.Get(where); err == nil {
			nominate = where
		}
	}
	var named []string
	if len(resp.GetVictims()) > 0 {
		named = append(named, joinRefs(resp.GetVictims()))
	}
	if len(requeued) > 0 {
		named = append(named, "Slurm job(s) "+joinStrings(requeued)+" (tidal-slurm requeues them)")
	}
	note := fmt.Sprintf("tidal-engine %s %s%s for this pod", preemptVerb(resp.GetReason()), strings.Join(named, " and "),
		reclaimedFrom(resp.GetReason(), resp.GetQueue(), gangs))
	if where != "" {
		note += " (" + where + ")"
	}
	if len(noticed) > 0 {
		note += "; " + joinStrings(noticed) + " got notice to checkpoint first"
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

// preemptionCause is the disruption cause (Disruption.cause) of a preemption by its reason.
func preemptionCause(reason string) string {
	if reason == "reclaim" {
		return "reclaim"
	}
	return "preemption"
}

// preemptVerb is what the preemptor's event says the engine does, by PreemptResponse.reason.
func preemptVerb(reason string) string {
	switch reason {
	case "reclaim":
		return "reclaims"
	case "priority+reclaim":
		return "preempts and reclaims"
	}
	return "preempts"
}

// reclaimedFrom is " from queue(s) A, B" for a reclaim: the queues of the victims (other than the
// preemptor's own), as the engine named them; "" when it is no reclaim or names none.
func reclaimedFrom(reason, own string, gangs []victimGang) string {
	if !strings.Contains(reason, "reclaim") {
		return ""
	}
	var qs []string
	seen := map[string]bool{own: true, "": true}
	for _, g := range gangs {
		if !seen[g.queue] {
			seen[g.queue] = true
			qs = append(qs, g.queue)
		}
	}
	if len(qs) == 0 {
		return ""
	}
	sort.Strings(qs)
	if len(qs) == 1 {
		return " from queue " + qs[0]
	}
	return " from queues " + joinStrings(qs)
}

// victimNote is the TidalDisrupted message on a pod evicted for preemptor, in the disruption
// poller's form ("evicted by PROFILE: CAUSE: ..."), e.g. "evicted by tidal-scheduler: reclaim:
// quota reclaim by ml/w-0 (queue team-a) from queue default". A queue the engine did not name
// (an older engine) is left out.
func victimNote(profile, reason, preemptor, queue, victimQueue string) string {
	var what string
	switch reason {
	case "reclaim":
		what = "quota reclaim"
	case "priority+reclaim":
		what = "priority preemption and quota reclaim"
	default:
		what = "priority preemption"
	}
	note := fmt.Sprintf("evicted by %s: %s: %s by %s", profile, preemptionCause(reason), what, preemptor)
	if queue != "" {
		note += " (queue " + queue + ")"
	}
	if strings.Contains(reason, "reclaim") && victimQueue != "" && victimQueue != queue {
		note += " from queue " + victimQueue
	}
	return note
}

// eventPod is the object a victim's event is about: the pod as the lister had it, else one built
// from the engine's reference (kind, namespace, name and UID are what an event records).
func eventPod(pod *v1.Pod, r *tidalv1.PodRef) *v1.Pod {
	if pod != nil {
		return pod
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: r.GetNamespace(), Name: r.GetName(), UID: types.UID(r.GetUid())}}
}

// appendNonEmpty appends s unless it is empty.
func appendNonEmpty(list []string, s string) []string {
	if s == "" {
		return list
	}
	return append(list, s)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
