package tidal

// Disruption notices: a workload that checkpoints on notice (tidal.dev/checkpoint-on-notice) is
// told before it is evicted, by PostFilter (a victim gang with notice_seconds) and by the
// disruption poller (NOTICE actions). Each pod gets ONE patch through the pods/status
// subresource that sets
//
//	status.conditions  DisruptionTarget: True, reason TidalDisruptionNotice,
//	                   message "<cause>: <reason>; evicted at <deadline> at the latest"
//	annotations        tidal.dev/disruption-notice: the deadline (RFC3339, UTC, seconds)
//	                   tidal.dev/disruption-cause:  the cause (preemption, reclaim, drain, ...)
//
// kube-apiserver's pod status strategy keeps metadata changes of a pods/status write (it resets
// only spec, deletionTimestamp and ownerReferences), so the scheduler needs no patch on pods
// themselves. The job sees the annotation (e.g. in a downwardAPI volume, updated in place) or the
// condition (through the API), checkpoints, and reports it by writing tidal.dev/last-checkpoint
// on its pod; the engine then asks for the eviction, or asks at the deadline anyway.
//
// A pod that carries the same notice (deadline and cause) is not patched again, so the notice
// repeats harmlessly at every poll; its event (TidalDisruptionNotice, Warning) is written once
// per notice. A notice the engine calls off is withdrawn by the disruption poller (withdraw.go:
// the condition turns False, reason TidalNoticeWithdrawn, the annotations go); notice records
// each notice it writes there (noticeWritten), so a poll in flight meanwhile does not withdraw it.
//
// Threading: called from the scheduling cycle (PostFilter) and the disruption poller's goroutine;
// both may patch one pod at once (the patch is idempotent). p.event takes p.mu.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
)

// The notice on the pod: its annotations and the reason of its DisruptionTarget condition and event.
const (
	NoticeAnnotation       = "tidal.dev/disruption-notice"
	CauseAnnotation        = "tidal.dev/disruption-cause"
	ReasonDisruptionNotice = "TidalDisruptionNotice"
)

// notice gives each live pod of refs the notice (pods gone, replaced or terminating are skipped)
// and returns the pods it patched ("ns/name"), up to podWorkers pods at once (evict.go). A failed
// patch is logged; the next poll repeats it.
func (p *Plugin) notice(ctx context.Context, refs []*tidalv1.PodRef, cause, reason string, deadline time.Time) []string {
	at := deadline.UTC().Truncate(time.Second).Format(time.RFC3339)
	msg := fmt.Sprintf("%s: %s; evicted at %s at the latest", cause, reason, at)
	patched := make([]string, len(refs))
	eachOf(len(refs), podWorkers, func(i int) { patched[i] = p.noticeOne(ctx, refs[i], at, cause, reason, msg) })
	var out []string
	for _, k := range patched {
		if k != "" {
			out = append(out, k)
		}
	}
	return out
}

// noticeOne gives one pod the notice; it returns the pod ("ns/name") if it patched it.
func (p *Plugin) noticeOne(ctx context.Context, r *tidalv1.PodRef, at, cause, reason, msg string) string {
	pod := p.livePod(r)
	if pod == nil {
		return ""
	}
	p.disruptions.noticeWritten(pod.UID) // even if it carries this notice: it stands anew
	if hasNotice(pod, at, cause) {
		return ""
	}
	patch, err := noticePatch(pod, at, cause, msg, time.Now())
	if err == nil {
		_, err = p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch,
			metav1.PatchOptions{}, "status")
	}
	if err != nil {
		p.logger.Info("disruption notice not written; retried at the next poll", "pod", klog.KObj(pod), "err", err)
		return ""
	}
	p.event(pod, v1.EventTypeWarning, ReasonDisruptionNotice, msg)
	p.logger.Info("disruption notice", "pod", klog.KObj(pod), "cause", cause, "deadline", at, "why", reason)
	return key(pod)
}

// hasNotice: the pod carries this notice already (annotations and condition).
func hasNotice(pod *v1.Pod, at, cause string) bool {
	if pod.Annotations[NoticeAnnotation] != at || pod.Annotations[CauseAnnotation] != cause {
		return false
	}
	c := disruptionTarget(pod)
	return c != nil && c.Status == v1.ConditionTrue && c.Reason == ReasonDisruptionNotice
}

func disruptionTarget(pod *v1.Pod) *v1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == v1.DisruptionTarget {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// noticePatch is the strategic merge patch of the notice: conditions merge by type, so the pod's
// other conditions stay; lastTransitionTime is set only when the condition turns True.
func noticePatch(pod *v1.Pod, at, cause, msg string, now time.Time) ([]byte, error) {
	cond := map[string]any{"type": v1.DisruptionTarget, "status": v1.ConditionTrue, "reason": ReasonDisruptionNotice, "message": msg}
	if c := disruptionTarget(pod); c == nil || c.Status != v1.ConditionTrue {
		cond["lastTransitionTime"] = metav1.NewTime(now)
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{NoticeAnnotation: at, CauseAnnotation: cause}},
		"status":   map[string]any{"conditions": []any{cond}},
	})
}
