package engineclient

// The Sync stream: one goroutine (loop, started by Client.Start) connects, sends the snapshot and
// then the coalesced changes, reads acks and runs the hooks; it reconnects with backoff. See the
// package comment in client.go for the protocol and the threading model.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"regexp"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
	"github.com/tidal-sched/tidal/shim/kube/pkg/convert"
)

func (c *Client) loop(ctx context.Context) {
	c.mu.Lock()
	synced := append([]cache.InformerSynced(nil), c.hasSynced...)
	c.mu.Unlock()
	if len(synced) > 0 && !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return
	}
	delay := c.cfg.ReconnectMin
	var refusedLogged time.Time
	for {
		began := time.Now()
		err := c.runStream(ctx)
		if ctx.Err() != nil {
			return
		}
		holder, refused := DoorHeld(err)
		c.mu.Lock()
		wasSynced := c.synced
		c.connected, c.synced, c.lastErr = false, false, err
		if wasSynced {
			c.syncedCh = make(chan struct{})
		}
		refusals := 0
		if refused {
			c.refusals++
			c.heldBy = holder
			refusals = c.refusals
		} else {
			c.refusals, c.heldBy = 0, ""
		}
		hooks := append([]Hooks(nil), c.hooks...)
		c.mu.Unlock()
		if time.Since(began) > 10*time.Second || wasSynced {
			delay = c.cfg.ReconnectMin
		}
		wait := delay/2 + time.Duration(rand.Int64N(int64(delay/2)+1))
		switch {
		case refused && (refusals == 1 || time.Since(refusedLogged) >= refusedLogEvery):
			// Another scheduler has the KUBERNETES door: nothing of ours reached the engine's state.
			refusedLogged = time.Now()
			c.logger.Info("tidal-engine refused the Sync stream: another holder has the KUBERNETES front door; "+
				"this scheduler stays unsynced (plans nothing) and keeps retrying",
				"engine", c.cfg.Address, "heldBy", holder, "holder", c.cfg.Holder, "refusals", refusals,
				"engineSaid", engineMessage(err), "retryIn", wait)
		case refused:
			c.logger.V(2).Info("tidal-engine still refuses the Sync stream (door held)", "engine", c.cfg.Address,
				"heldBy", holder, "refusals", refusals, "retryIn", wait)
		default:
			c.logger.Info("tidal-engine Sync stream ended; reconnecting", "engine", c.cfg.Address, "err", err, "retryIn", wait)
		}
		for _, h := range hooks {
			if h.OnDisconnected != nil {
				h.OnDisconnected(err)
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if refused {
			delay = min(2*delay, c.cfg.RefusedRetryMax)
		} else {
			delay = min(2*delay, c.cfg.ReconnectMax)
		}
	}
}

// refusedLogEvery: while the door stays held by another holder, the refusal is logged at Info this
// often (every attempt at V(2)).
const refusedLogEvery = 30 * time.Second

var heldByRE = regexp.MustCompile(`held by (holder "([^"]*)"|an anonymous holder)`)

// DoorHeld reports whether err is the engine refusing a Sync stream because another holder has the
// door's lease (ABORTED), and that holder as the engine's message names it: the holder's name, "an
// anonymous holder", or "" when the message does not say.
func DoorHeld(err error) (holder string, ok bool) {
	if err == nil || status.Code(err) != codes.Aborted {
		return "", false
	}
	m := heldByRE.FindStringSubmatch(engineMessage(err))
	switch {
	case m == nil:
		return "", true
	case m[1] == "an anonymous holder":
		return m[1], true
	}
	return m[2], true
}

// engineMessage is the message of the gRPC status err carries (wrapped or not), without the
// wrapping text.
func engineMessage(err error) string {
	var gs interface{ GRPCStatus() *status.Status }
	if errors.As(err, &gs) && gs.GRPCStatus() != nil {
		return gs.GRPCStatus().Message()
	}
	return err.Error()
}

type recvResult struct {
	ack *tidalv1.SyncAck
	err error
}

func (c *Client) runStream(ctx context.Context) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// WaitForReady: while the engine is down the stream waits for the channel to (re)connect.
	st, err := c.api.Sync(sctx, grpc.WaitForReady(true))
	if err != nil {
		return err
	}
	finished := c.finishedMembers(sctx) // finished.go: looked up before the lock
	c.mu.Lock()
	c.connected = true
	msgs := c.snapshotLocked(finished)
	c.mu.Unlock()
	term := c.leadership()
	if len(msgs) > 0 {
		msgs[0].Leadership = term
	}
	var queue []inflight
	for i, m := range msgs {
		if err := st.Send(m); err != nil {
			// io.EOF: the engine ended the stream (e.g. ABORTED: another holder has the door); its
			// status comes with Recv (no receiving goroutine runs yet).
			if errors.Is(err, io.EOF) {
				for {
					if _, rerr := st.Recv(); rerr != nil {
						return fmt.Errorf("snapshot: the engine ended the stream: %w", rerr)
					}
				}
			}
			return fmt.Errorf("send snapshot: %w", err)
		}
		queue = append(queue, inflight{resync: true, last: i == len(msgs)-1})
	}
	c.logger.V(2).Info("tidal-engine Sync snapshot sent", "engine", c.cfg.Address, "messages", len(msgs))
	acks := make(chan recvResult, 64)
	go func() {
		for {
			a, err := st.Recv()
			select {
			case acks <- recvResult{a, err}:
			case <-sctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	ticker := time.NewTicker(c.cfg.FlushInterval)
	defer ticker.Stop()
	flush := func() error {
		if len(queue) >= c.cfg.MaxInflight {
			return nil // back-pressure: keep coalescing until acks arrive
		}
		msgs, infos := c.takePending()
		if now := c.leadership(); !proto.Equal(now, term) {
			term = now
			if len(msgs) == 0 {
				msgs, infos = []*tidalv1.SyncRequest{{Door: tidalv1.FrontDoor_KUBERNETES}}, []*SyncedInfo{{}}
			}
			msgs[0].Leadership = term
		}
		for i, m := range msgs {
			if err := st.Send(m); err != nil {
				if errors.Is(err, io.EOF) { // the engine ended the stream: its status comes with Recv
					return endedBy(ctx, acks)
				}
				return fmt.Errorf("send: %w", err)
			}
			queue = append(queue, inflight{info: *infos[i]})
		}
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			_ = st.CloseSend()
			return ctx.Err()
		case r := <-acks:
			if r.err != nil {
				return fmt.Errorf("recv: %w", r.err)
			}
			if len(queue) == 0 {
				return errors.New("engine sent an ack for no message")
			}
			head := queue[0]
			queue = queue[1:]
			if err := c.handleAck(r.ack, head); err != nil {
				return err
			}
		case <-ticker.C:
			if err := flush(); err != nil {
				return err
			}
		case <-c.kick:
			if err := flush(); err != nil {
				return err
			}
		}
	}
}

// leadership: this scheduler's term for the engine (Config.Leadership), nil without a provider.
func (c *Client) leadership() *tidalv1.Leadership {
	if c.cfg.Leadership == nil {
		return nil
	}
	election, until := c.cfg.Leadership()
	out := &tidalv1.Leadership{Election: election}
	if !until.IsZero() {
		out.LeadingUntilUnixMs = until.UnixMilli()
	}
	return out
}

// endedBy waits for the receiving goroutine to report why the engine ended the stream.
func endedBy(ctx context.Context, acks <-chan recvResult) error {
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case r := <-acks:
			if r.err != nil {
				return fmt.Errorf("recv: %w", r.err)
			}
		case <-t.C:
			return errors.New("send: the engine closed the stream")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *Client) handleAck(a *tidalv1.SyncAck, m inflight) error {
	if s := a.GetStatus(); s != nil && s.GetCode() != tidalv1.Status_SUCCESS {
		c.logger.Info("tidal-engine refused part of a Sync batch", "code", s.GetCode(), "reasons", s.GetReasons())
	}
	if w := a.GetNodeWarnings(); len(w) > 0 {
		c.mu.Lock()
		hooks := append([]Hooks(nil), c.hooks...)
		c.mu.Unlock()
		for _, h := range hooks {
			if h.OnNodeWarnings != nil {
				h.OnNodeWarnings(w)
			}
		}
	}
	c.mu.Lock()
	c.generation = a.GetGeneration()
	info := m.info
	if m.resync {
		if !m.last {
			c.mu.Unlock()
			return nil
		}
		info.Resync = true
		info.EngineRestarted = c.epoch != "" && c.epoch != a.GetEngineEpoch()
		info.CapacityFreed = true
		info.NodesChanged = true
		c.epoch = a.GetEngineEpoch()
	} else if a.GetEngineEpoch() != c.epoch {
		c.mu.Unlock()
		return fmt.Errorf("engine epoch changed mid-stream (%s -> %s)", c.epoch, a.GetEngineEpoch())
	}
	info.Epoch = c.epoch
	hooks := append([]Hooks(nil), c.hooks...)
	c.mu.Unlock()
	if info.Resync {
		c.mu.Lock()
		refused := c.refusals
		c.refusals, c.heldBy = 0, ""
		c.mu.Unlock()
		c.logger.Info("tidal-engine synced", "engine", c.cfg.Address, "epoch", info.Epoch,
			"engineRestarted", info.EngineRestarted, "generation", a.GetGeneration(), "holder", c.cfg.Holder,
			"refusedBefore", refused)
	}
	if info.Resync {
		for _, h := range hooks {
			if h.OnResync != nil {
				h.OnResync(info)
			}
		}
		c.mu.Lock()
		c.synced = true
		close(c.syncedCh)
		c.mu.Unlock()
	}
	if info.Resync || info.CapacityFreed || len(info.PendingPodNamespaces) > 0 {
		for _, h := range hooks {
			if h.OnSynced != nil {
				h.OnSynced(info)
			}
		}
	}
	return nil
}

// snapshotLocked drops the pending changes (the snapshot supersedes them) and lists every node and
// pod from the informer stores, as one resync message or several chunks, then the finished gang
// members (finished.go), each upserted and vanished in the same message, after every pod.
func (c *Client) snapshotLocked(finished []*tidalv1.Pod) []*tidalv1.SyncRequest {
	c.pendingPods = map[string]podOp{}
	c.pendingNodes = map[string]*tidalv1.Node{}
	// The first message claims the KUBERNETES door's lease for Holder (ABORTED if another holder
	// has it: then nothing of this snapshot is applied).
	first := &tidalv1.SyncRequest{Resync: true, Door: tidalv1.FrontDoor_KUBERNETES, Holder: c.cfg.Holder,
		LeaseTtlMs: c.cfg.LeaseTTL.Milliseconds()}
	msgs := []*tidalv1.SyncRequest{first}
	cur, size := first, 0
	add := func(sz int) *tidalv1.SyncRequest {
		if size > 0 && size+sz > c.cfg.MaxMessageBytes {
			cur, size = &tidalv1.SyncRequest{Door: tidalv1.FrontDoor_KUBERNETES}, 0
			msgs = append(msgs, cur)
		}
		size += sz + 8
		return cur
	}
	if c.nodeStore != nil {
		for _, o := range c.nodeStore.List() {
			if n, ok := o.(*v1.Node); ok {
				m := convert.Node(n)
				c.logOversize(nil, m)
				r := add(proto.Size(m))
				r.UpsertNodes = append(r.UpsertNodes, m)
			}
		}
	}
	if c.podStore != nil {
		for _, o := range c.podStore.List() {
			if p, ok := o.(*v1.Pod); ok {
				m := convert.Pod(p)
				c.logOversize(m, nil)
				r := add(proto.Size(m))
				r.UpsertPods = append(r.UpsertPods, m)
			}
		}
	}
	for _, m := range finished {
		r := add(proto.Size(m) + len(m.Uid))
		r.UpsertPods = append(r.UpsertPods, m)
		r.VanishedPods = append(r.VanishedPods, m.Uid)
	}
	for _, m := range c.autoscalerSnapshotLocked() {
		r := add(proto.Size(m))
		r.UpsertAutoscalers = append(r.UpsertAutoscalers, m)
	}
	// One snapshot over several messages: the engine removes what it did not name at the last.
	for _, m := range msgs[:len(msgs)-1] {
		m.SnapshotContinues = true
	}
	return msgs
}

// logOversize logs a pod or node that convert sent without its keys, being over
// convert.MaxObjectBytes (the engine refuses such a pending pod, naming the size, and keeps such a
// node cordoned).
func (c *Client) logOversize(p *tidalv1.Pod, n *tidalv1.Node) {
	if size := convert.PodOversize(p); size > 0 {
		c.logger.Error(nil, "pod too large for a Sync message: sent without its labels, annotations and constraints; "+
			"the engine refuses it while pending", "pod", p.GetNamespace()+"/"+p.GetName(), "bytes", size,
			"limit", convert.MaxObjectBytes)
	}
	if size := convert.NodeOversize(n); size > 0 {
		c.logger.Error(nil, "node too large for a Sync message: sent cordoned, without its labels and taints",
			"node", n.GetName(), "bytes", size, "limit", convert.MaxObjectBytes)
	}
}

// takePending empties the pending changes into messages of at most MaxBatch objects and
// MaxMessageBytes (a message holds at least one object; one is at most convert.MaxObjectBytes).
func (c *Client) takePending() ([]*tidalv1.SyncRequest, []*SyncedInfo) {
	c.mu.Lock()
	pods, nodes, hpas := c.pendingPods, c.pendingNodes, c.pendingAutoscalers
	if len(pods)+len(nodes)+len(hpas) == 0 {
		c.mu.Unlock()
		return nil, nil
	}
	c.pendingPods, c.pendingNodes = map[string]podOp{}, map[string]*tidalv1.Node{}
	c.pendingAutoscalers = map[string]*tidalv1.Autoscaler{}
	c.mu.Unlock()
	var msgs []*tidalv1.SyncRequest
	var infos []*SyncedInfo
	var cur *tidalv1.SyncRequest
	var info *SyncedInfo
	n, size := 0, 0
	next := func(sz int) {
		if cur == nil || n >= c.cfg.MaxBatch || (n > 0 && size+sz > c.cfg.MaxMessageBytes) {
			cur, info = &tidalv1.SyncRequest{Door: tidalv1.FrontDoor_KUBERNETES}, &SyncedInfo{}
			msgs = append(msgs, cur)
			infos = append(infos, info)
			n, size = 0, 0
		}
		n++
		size += sz + 8 // the field's tag and length
	}
	// Nodes first: pods may name a node that is new in this batch.
	for name, node := range nodes {
		if node == nil {
			next(len(name))
		} else {
			c.logOversize(nil, node)
			next(proto.Size(node))
		}
		if node == nil {
			cur.DeleteNodes = append(cur.DeleteNodes, name)
		} else {
			cur.UpsertNodes = append(cur.UpsertNodes, node)
		}
		info.CapacityFreed = true
		info.NodesChanged = true
	}
	// HPAs (autoscalers.go): a headroom that shrank may let waiting pods in.
	for key, h := range hpas {
		if h == nil {
			next(len(key))
			cur.DeleteAutoscalers = append(cur.DeleteAutoscalers, key)
		} else {
			next(proto.Size(h))
			cur.UpsertAutoscalers = append(cur.UpsertAutoscalers, h)
		}
		info.CapacityFreed = true
	}
	for uid, op := range pods {
		switch {
		case op.pod != nil:
			c.logOversize(op.pod, nil)
			next(proto.Size(op.pod))
			cur.UpsertPods = append(cur.UpsertPods, op.pod)
		case op.vanished:
			next(len(uid))
			cur.VanishedPods = append(cur.VanishedPods, uid)
		default:
			// A final state travels in the same message as its delete (the engine applies a
			// message's upserts before its deletes).
			sz := len(uid)
			if op.final != nil {
				c.logOversize(op.final, nil)
				sz += proto.Size(op.final) + 8
			}
			next(sz)
			if op.final != nil {
				cur.UpsertPods = append(cur.UpsertPods, op.final)
			}
			cur.DeletePods = append(cur.DeletePods, uid)
		}
		if op.freed {
			info.CapacityFreed = true
		}
		if op.pending {
			if info.PendingPodNamespaces == nil {
				info.PendingPodNamespaces = map[string]struct{}{}
			}
			info.PendingPodNamespaces[op.ns] = struct{}{}
		}
	}
	return msgs, infos
}
