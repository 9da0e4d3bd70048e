package tidal

// Withdrawing a called-off notice: the engine may cancel a disruption while it is still in notice
// (a preemption whose preemptor no longer needs the room, or whose hold an engine restart lost;
// any disruption it drops before the eviction); it then simply no longer appears in the
// Disruptions answer. Left alone, the pod would keep telling its job that it is about to be evicted. So after
// each successful poll the poller withdraws the notice of every pod that
//
//   - carries Tidal's notice (the tidal.dev/disruption-notice or -cause annotation, or the
//     DisruptionTarget condition True with reason TidalDisruptionNotice) — the pods themselves are
//     the record, so a notice written before a scheduler restart or a failover is withdrawn too;
//   - is one of this poller's profiles' pods (spec.schedulerName), still there and running (not
//     terminating, not Succeeded or Failed: an evicted pod, or a job that checkpointed and exited,
//     keeps its notice as its record);
//   - is named by no disruption of the answer (NOTICE or EVICT, by UID);
//   - did not get its notice while the answer was in flight (PostFilter gives notice right after
//     the engine's Preempt answer, which may come after the engine answered this poll).
//
// The withdrawal is ONE pods/status patch (like the notice, notice.go): the DisruptionTarget
// condition turns False with reason TidalNoticeWithdrawn and the message "the engine called off
// the disruption (cause <cause>)", and both annotations are removed; a Normal event
// TidalNoticeWithdrawn with the same message goes on the pod. A pod withdrawn already carries
// neither, so it is not patched again; one the pod lister still shows as it was when patched
// (watch lag) is skipped until the lister catches up.
//
// Only a poll whose answer is known withdraws anything: an RPC error, an Unimplemented engine, a
// non-SUCCESS status, or a Sync stream that was not synced on the same engine epoch before and
// after the call changes nothing (unknown is never "gone"). A standby replica never polls
// (disruptions.go, run) and withdraw checks pkg/leader itself too.
//
// Threading: withdraw runs on the disruption poller's goroutine (after the answer's actions);
// notice (scheduling cycle and poller) records the notices it writes through noticeWritten. The
// noticeBook is guarded by its own mu; p.event takes p.mu.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
	"github.com/tidal-sched/tidal/shim/kube/pkg/leader"
)

// ReasonNoticeWithdrawn: the reason of the DisruptionTarget condition (False) and of the event on
// a pod whose notice the engine called off.
const ReasonNoticeWithdrawn = "TidalNoticeWithdrawn"

// noticeBook is what the poller keeps to withdraw notices safely: both maps hold only a few
// entries (notices written during the poll in flight; pods withdrawn the lister has not caught up
// with) and are trimmed at every withdraw round.
type noticeBook struct {
	mu        sync.Mutex
	written   map[types.UID]time.Time // when notice() last began patching the pod
	withdrawn map[types.UID]string    // withdrawn pods -> the resourceVersion they were patched from
}

// noticeWritten records that a notice for uid is about to be written (nil-safe: a plugin without
// a pod lister has no poller).
func (dp *disruptionPoller) noticeWritten(uid types.UID) {
	if dp == nil {
		return
	}
	b := &dp.notices
	b.mu.Lock()
	if b.written == nil {
		b.written = map[types.UID]time.Time{}
	}
	b.written[uid] = time.Now()
	b.mu.Unlock()
}

// withdraw withdraws the notices the engine called off (see the top of the file); resp is the
// answer of a poll asked at `asked`. It returns the pods it patched ("ns/name").
func (dp *disruptionPoller) withdraw(ctx context.Context, resp *tidalv1.DisruptionsResponse, asked time.Time) []string {
	if resp.GetStatus().GetCode() != tidalv1.Status_SUCCESS || !leader.Leading() {
		return nil
	}
	dp.mu.Lock()
	plugins := append([]*Plugin(nil), dp.plugins...)
	dp.mu.Unlock()
	if len(plugins) == 0 || plugins[0].pods == nil {
		return nil
	}
	owners := map[string]*Plugin{}
	for _, p := range plugins {
		if _, ok := owners[p.profile]; !ok {
			owners[p.profile] = p
		}
	}
	named := map[string]bool{} // the answer's pods: by UID, or "ns/name" for a ref without one
	for _, d := range resp.GetDisruptions() {
		for _, r := range d.GetPods() {
			if r.GetUid() != "" {
				named[r.GetUid()] = true
			} else {
				named[r.GetNamespace()+"/"+r.GetName()] = true
			}
		}
	}
	all, err := plugins[0].pods.List(labels.Everything())
	if err != nil {
		return nil
	}
	var stale []*v1.Pod
	seen := map[types.UID]string{} // candidates still showing the resourceVersion they were withdrawn from
	b := &dp.notices
	b.mu.Lock()
	for _, pod := range all {
		if owners[pod.Spec.SchedulerName] == nil || !withdrawable(pod) || named[string(pod.UID)] || named[key(pod)] {
			continue
		}
		if at, ok := b.written[pod.UID]; ok && !at.Before(asked) {
			continue // noticed while the answer was in flight: the next poll judges it
		}
		if rv, ok := b.withdrawn[pod.UID]; ok && rv == pod.ResourceVersion {
			seen[pod.UID] = rv // patched already; the lister has not seen it yet
			continue
		}
		stale = append(stale, pod)
	}
	for uid, at := range b.written {
		if at.Before(asked) {
			delete(b.written, uid) // judged against an answer asked after it was written
		}
	}
	b.withdrawn = seen
	b.mu.Unlock()

	var out []string
	for _, pod := range stale {
		p := owners[pod.Spec.SchedulerName]
		if p.withdrawNotice(ctx, pod) {
			b.mu.Lock()
			b.withdrawn[pod.UID] = pod.ResourceVersion
			b.mu.Unlock()
			out = append(out, key(pod))
		}
	}
	return out
}

// withdrawable: the pod carries Tidal's notice and is still there and running.
func withdrawable(pod *v1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		return false
	}
	_, n := pod.Annotations[NoticeAnnotation]
	_, c := pod.Annotations[CauseAnnotation]
	return n || c || ourNoticeCondition(pod) != nil
}

// ourNoticeCondition is the pod's DisruptionTarget condition if it is Tidal's notice (True,
// reason TidalDisruptionNotice), else nil (absent, withdrawn, or another writer's).
func ourNoticeCondition(pod *v1.Pod) *v1.PodCondition {
	if c := disruptionTarget(pod); c != nil && c.Status == v1.ConditionTrue && c.Reason == ReasonDisruptionNotice {
		return c
	}
	return nil
}

// noticeCause is the cause the pod's notice names: its annotation, else the condition message's
// prefix ("<cause>: <reason>; ..."), else "unknown".
func noticeCause(pod *v1.Pod) string {
	if c := pod.Annotations[CauseAnnotation]; c != "" {
		return c
	}
	if c := ourNoticeCondition(pod); c != nil {
		if i := strings.Index(c.Message, ":"); i > 0 {
			return c.Message[:i]
		}
	}
	return "unknown"
}

// withdrawNotice patches one pod (true when it was patched). A failed patch is logged; the next
// poll repeats it.
func (p *Plugin) withdrawNotice(ctx context.Context, pod *v1.Pod) bool {
	msg := fmt.Sprintf("the engine called off the disruption (cause %s)", noticeCause(pod))
	patch, err := withdrawPatch(pod, msg, time.Now())
	if err == nil {
		_, err = p.handle.ClientSet().CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch,
			metav1.PatchOptions{}, "status")
	}
	if err != nil {
		p.logger.Info("disruption notice not withdrawn; retried at the next poll", "pod", klog.KObj(pod), "err", err)
		return false
	}
	p.event(pod, v1.EventTypeNormal, ReasonNoticeWithdrawn, msg)
	p.logger.Info("disruption notice withdrawn", "pod", klog.KObj(pod), "cause", noticeCause(pod),
		"deadline", pod.Annotations[NoticeAnnotation])
	return true
}

// withdrawPatch is the strategic merge patch of the withdrawal: the annotations the pod carries
// are removed (null), and Tidal's DisruptionTarget condition turns False (merged by type, so the
// pod's other conditions stay; another writer's DisruptionTarget is left as it is). The UID
// precondition keeps a pod replaced under the same name untouched.
func withdrawPatch(pod *v1.Pod, msg string, now time.Time) ([]byte, error) {
	body := map[string]any{"metadata": map[string]any{"uid": pod.UID}}
	ann := map[string]any{}
	for _, k := range []string{NoticeAnnotation, CauseAnnotation} {
		if _, ok := pod.Annotations[k]; ok {
			ann[k] = nil
		}
	}
	if len(ann) > 0 {
		body["metadata"].(map[string]any)["annotations"] = ann
	}
	if ourNoticeCondition(pod) != nil {
		body["status"] = map[string]any{"conditions": []any{map[string]any{"type": v1.DisruptionTarget, "status": v1.ConditionFalse,
			"reason": ReasonNoticeWithdrawn, "message": msg, "lastTransitionTime": metav1.NewTime(now)}}}
	}
	return json.Marshal(body)
}
