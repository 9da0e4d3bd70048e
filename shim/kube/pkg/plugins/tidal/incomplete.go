package tidal

// Gang members that wait long for the rest of their gang get one event each.
//
// PreEnqueue holds a member whose gang is not complete yet (CheckPod WAIT: "gang ml/llm: 2 of 4
// members exist") out of the scheduling queue, and kube-scheduler then writes no event and no
// PodScheduled condition. That is right while a gang's pods are being created (a burst completes
// in milliseconds), but a gang that never completes (a gang-size larger than what its controller
// creates, a PodGroup whose minMember is never reached) would sit Pending with nothing saying why.
// So a member still held as incomplete `incompleteEventMs` (30 s) after it was first held gets one
// Normal event, TidalGangIncomplete, with the engine's latest count; once per pod (a gang of 512
// that fills one member at a time would otherwise write one per member per count).
//
// Threading: noteIncomplete and forgetIncompleteLocked run on kube-scheduler's goroutines (PreEnqueue,
// informer handlers) under p.mu; sweepIncomplete runs on the plugin's ticker goroutine, takes p.mu
// to choose the pods and writes the events without it.

import (
	"context"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tidal-sched/tidal/shim/kube/pkg/leader"
)

// ReasonGangIncomplete: the event a member gets once it has waited incompleteEventMs for its gang.
const ReasonGangIncomplete = "TidalGangIncomplete"

// incompleteMember: since when a pod is held as incomplete, the engine's latest word on its gang,
// and whether its event was written.
type incompleteMember struct {
	since    time.Time
	msg      string
	reported bool
}

// noteIncomplete records that PreEnqueue held pod as incomplete (msg: the engine's reason). The
// first hold starts the clock; later holds only refresh the message.
func (p *Plugin) noteIncomplete(pod *v1.Pod, msg string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m := p.incomplete[pod.UID]; m != nil {
		m.msg = msg
		return
	}
	p.incomplete[pod.UID] = &incompleteMember{since: now, msg: msg}
}

// forgetIncompleteLocked: the pod's gang is complete, it was refused for another reason, or it is gone.
// Call with p.mu held.
func (p *Plugin) forgetIncompleteLocked(uid types.UID) { delete(p.incomplete, uid) }

// sweepIncomplete writes the event of every member held (now) as incomplete for at least `after`
// and not reported yet; it returns how many it wrote. A standby replica writes none (and marks
// none, so it reports once it leads).
func (p *Plugin) sweepIncomplete(now time.Time, after time.Duration) int {
	if p.handle == nil || p.handle.EventRecorder() == nil || !leader.Leading() {
		return 0
	}
	type due struct {
		pod  *v1.Pod
		msg  string
		wait time.Duration
	}
	var out []due
	p.mu.Lock()
	for uid, m := range p.incomplete {
		pod, held := p.held[uid]
		if m.reported || !held || now.Sub(m.since) < after {
			continue
		}
		m.reported = true
		out = append(out, due{pod, m.msg, now.Sub(m.since).Round(time.Second)})
	}
	p.mu.Unlock()
	for _, d := range out {
		hint := "the gang is placed once all its members exist (tidal.dev/gang-size, or its PodGroup's minMember); " +
			"check that its controller creates that many pods"
		if strings.Contains(d.msg, "spec.schedulingGates") { // the engine counts a gated member apart (engine_gang.cc)
			hint = "the gang is placed once all its members exist and none is held back by a scheduling gate; " +
				"whoever added the gate (a queueing controller such as Kueue, or a person) removes it"
		}
		p.handle.EventRecorder().Eventf(d.pod, nil, v1.EventTypeNormal, ReasonGangIncomplete, "Scheduling",
			"%s (waiting %s): %s", d.msg, d.wait, hint)
	}
	return len(out)
}

// sweepIncompleteEvery runs sweepIncomplete until ctx ends, every `after`/4 (at least 1 s apart).
func (p *Plugin) sweepIncompleteEvery(ctx context.Context, after time.Duration) {
	t := time.NewTicker(max(after/4, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			p.sweepIncomplete(now, after)
		}
	}
}
