// Package engineclient is the shim's one connection to tidal-engine (proto/tidal/v1, generated into
// gen/tidal/v1 at build time).
//
// It does two things and decides nothing:
//
//  1. Sync: streams every Node and every Pod (all schedulers' pods: they use capacity too) from the
//     scheduler's shared informers to the engine, and every HorizontalPodAutoscaler with the pod
//     template of what it scales (autoscalers.go). Changes are coalesced per object and flushed every
//     FlushInterval or as soon as MaxBatch objects are pending. The first message(s) of every new
//     stream are a full snapshot (resync=true, split into chunks of at most MaxMessageBytes when
//     large; later chunks are plain upserts). When the stream breaks (engine restart, socket gone) it
//     reconnects by itself with backoff and resyncs; the engine's epoch in the acks tells a restarted
//     engine from a reconnect to the same one. Hooks run after each acknowledged batch, so whoever
//     reacts to "the engine now knows X" (requeueing pods) never races the stream.
//     Every message names the KUBERNETES front door; the first of each stream also carries Holder and
//     LeaseTTL, claiming the door's lease. While another holder has the door (a second scheduler
//     against the same engine) the engine refuses the stream with ABORTED: the client logs who holds
//     it, stays unsynced (so the plugin neither plans nor takes activations) and retries with
//     backoff up to RefusedRetryMax; nothing is sent that could replace the holder's objects.
//  2. Unary calls (CheckPod, PlanPod, Reserve, Unreserve, Permit, Preempt, Bound, Explain, Overdue,
//     NodeRefused, Evicted, TakeActivations), each with a deadline (Timeout). Transport failures come back as errors; scheduling outcomes are
//     the tidal.v1.Status inside the response.
//
// Files: client.go (config, the informer handlers that record changes), autoscalers.go (HPAs), stream.go (the Sync loop),
// calls.go (the unary calls), tls.go (mutual TLS with reloaded files).
//
// Threading: all methods are safe for concurrent use. Informer handlers only record the latest
// version of each object under mu; one goroutine (started by Start) owns the stream, sends batches,
// reads acks and calls the hooks (never with mu held).
package engineclient

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
	"github.com/tidal-sched/tidal/shim/kube/pkg/convert"
)

// Config of one engine connection. Zero values take the defaults.
type Config struct {
	// Address: unix:///ABSOLUTE/PATH, or HOST:PORT (default unix:///tmp/tidal-engine.sock, the
	// engine's default --listen).
	Address string
	// Timeout of each unary call (default 2s).
	Timeout time.Duration
	// FlushInterval: pending Sync changes are sent at least this often (default 50ms).
	FlushInterval time.Duration
	// MaxBatch: a Sync message carries at most this many objects; reaching it flushes at once
	// (default 500).
	MaxBatch int
	// MaxMessageBytes: Sync messages (snapshot chunks and batches of changes) stay below this
	// size (default convert.SyncBatchBytes, 4 MiB; the engine receives up to 16 MiB:
	// core/api/limits.h).
	MaxMessageBytes int
	// ReconnectMin / ReconnectMax bound the backoff between Sync stream attempts (100ms / 2s).
	ReconnectMin, ReconnectMax time.Duration
	// MaxInflight: Sync messages sent but not yet acknowledged before flushing pauses (default 16).
	MaxInflight int
	// Holder names this scheduler in the first message of every Sync stream: the engine gives the
	// KUBERNETES door's lease to one holder at a time (default DefaultHolder("tidal-scheduler")).
	Holder string
	// LeaseTTL: how long the engine keeps the lease for Holder after its stream closed, so that a
	// different holder cannot take the door over during a reconnect (default 15s).
	LeaseTTL time.Duration
	// RefusedRetryMax bounds the backoff between attempts while another holder has the door
	// (default 5s, at least ReconnectMax).
	RefusedRetryMax time.Duration
	// TLS: mutual TLS with the engine, files re-read when they change (tls.go). Without it the
	// connection is plaintext, allowed for a unix socket or a loopback address, or anywhere with
	// Insecure.
	TLS      TLSFiles
	Insecure bool
	// Leadership (optional): whether leader election is on and until when this scheduler leads
	// (zero: standing by), sent in the first message of every Sync stream and again whenever it
	// changes (each renewal), so the engine serves the Slurm door only on the leading replica
	// (SyncRequest.leadership). Nil: never sent (tidal-explain, tests).
	Leadership func() (election bool, until time.Time)
}

const DefaultAddress = "unix:///tmp/tidal-engine.sock"

func (c *Config) defaults() {
	if c.Address == "" {
		c.Address = DefaultAddress
	}
	if c.Timeout <= 0 {
		c.Timeout = 2 * time.Second
	}
	if c.FlushInterval <= 0 {
		c.FlushInterval = 50 * time.Millisecond
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = 500
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = convert.SyncBatchBytes
	}
	if c.ReconnectMin <= 0 {
		c.ReconnectMin = 100 * time.Millisecond
	}
	if c.ReconnectMax <= 0 {
		c.ReconnectMax = 2 * time.Second
	}
	if c.MaxInflight <= 0 {
		c.MaxInflight = 16
	}
	if c.Holder == "" {
		c.Holder = DefaultHolder("tidal-scheduler")
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = 15 * time.Second
	}
	if c.RefusedRetryMax <= 0 {
		c.RefusedRetryMax = 5 * time.Second
	}
	c.RefusedRetryMax = max(c.RefusedRetryMax, c.ReconnectMax)
}

// DefaultHolder is "SCHEDULER@HOST": the scheduler (profile) name and this machine's host name (in
// a pod: the pod's name), so a restart of the same pod reclaims its lease at once and another
// replica is told apart.
func DefaultHolder(scheduler string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	if scheduler == "" {
		scheduler = "tidal-scheduler"
	}
	return scheduler + "@" + host
}

// Target turns an engine address into a gRPC target: unix:// stays as it is, HOST:PORT is dialled
// directly (no DNS resolver round trip).
func Target(addr string) string {
	if strings.HasPrefix(addr, "unix:") || strings.Contains(addr, ":///") {
		return addr
	}
	return "passthrough:///" + addr
}

// SyncedInfo tells the hooks what the engine has just acknowledged.
type SyncedInfo struct {
	// Resync: a full snapshot was acknowledged (a new stream). Plans the engine held are gone.
	Resync bool
	// EngineRestarted: the snapshot went to an engine with another epoch than the last one seen.
	EngineRestarted bool
	Epoch           string
	// PendingPodNamespaces: namespaces of unbound pods added or changed in the batch (a gang may
	// have become complete).
	PendingPodNamespaces map[string]struct{}
	// CapacityFreed: a bound pod went away or a node was added or changed in the batch.
	CapacityFreed bool
	// NodesChanged: a node was added, changed or deleted in the batch (or a resync).
	NodesChanged bool
}

// Hooks are called on the stream goroutine, in order, never concurrently with each other.
type Hooks struct {
	// OnResync: the engine acknowledged a full snapshot; called before Synced turns true, so work
	// released here (e.g. pods waiting on plans of the previous engine state) is never work that
	// started against the new state.
	OnResync func(SyncedInfo)
	// OnSynced: after every acknowledged batch that matters (Resync, CapacityFreed, pending pods);
	// for a resync, once Synced is true.
	OnSynced       func(SyncedInfo)
	OnDisconnected func(err error)
	// OnNodeWarnings: the engine accepted nodes with a caveat for their admins (e.g. a missing
	// topology label); called as each acknowledgement arrives.
	OnNodeWarnings func([]*tidalv1.NodeWarning)
}

type podOp struct {
	pod *tidalv1.Pod // nil: delete
	// For a delete: the pod's final state when it ended Succeeded or Failed, sent before the delete
	// in the same message. Coalescing (a slow ack, a busy engine) may have swallowed the update that
	// said so, and a member deleted while the engine thinks it runs is a lost member: its gang
	// would be requeued whole although it finished.
	final    *tidalv1.Pod
	vanished bool // for a delete: a tombstone (gone on a relist, unseen), so how it ended is unknown
	freed    bool // this change frees capacity (a bound pod deleted)
	pending  bool // an unbound pod upserted
	ns       string
}

type inflight struct {
	resync, last bool
	info         SyncedInfo
}

// Client is one engine connection. Create with New (or Shared), attach informers with Watch,
// then Start.
type Client struct {
	cfg    Config
	conn   *grpc.ClientConn
	api    tidalv1.EngineClient
	logger klog.Logger

	mu           sync.Mutex
	pendingPods  map[string]podOp         // uid -> latest change
	lookup       PodLookup                // ambiguous deletes (ended.go); nil: none
	pendingNodes map[string]*tidalv1.Node // name -> latest (nil: delete)
	nodeStore    cache.Store              // informer stores, for snapshots
	podStore     cache.Store
	hasSynced    []cache.InformerSynced
	hooks        []Hooks
	watching     bool
	started      bool
	connected    bool // stream open
	synced       bool // snapshot acknowledged on the current stream
	syncedCh     chan struct{}
	epoch        string
	generation   uint64
	lastErr      error
	refusals     int    // Sync attempts refused in a row (another holder has the door)
	heldBy       string // that holder, as the engine named it ("" while not refused)
	kick         chan struct{}

	// Finished gang members named in snapshots (finished.go); nil: none.
	finishedLister FinishedLister

	// HPAs and the workloads they scale (autoscalers.go): the stores, the last message computed
	// per HPA ("ns/name") and the changes not yet sent (nil: delete).
	hpaStore              cache.Indexer
	deployStore, stsStore cache.Store
	autoscalers           map[string]*tidalv1.Autoscaler
	pendingAutoscalers    map[string]*tidalv1.Autoscaler
}

// New dials lazily (no I/O until the first call or Start); with TLS files it reads them once here
// (errors name the file).
func New(cfg Config, logger klog.Logger) (*Client, error) {
	cfg.defaults()
	creds, err := transportCredentials(cfg, logger)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(Target(cfg.Address),
		grpc.WithTransportCredentials(creds),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: time.Second,
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(convert.MaxSyncMessageBytes), grpc.MaxCallSendMsgSize(convert.MaxSyncMessageBytes)),
	)
	if err != nil {
		return nil, fmt.Errorf("tidal-engine address %q: %w", cfg.Address, err)
	}
	return &Client{
		cfg: cfg, conn: conn, api: tidalv1.NewEngineClient(conn), logger: logger,
		pendingPods: map[string]podOp{}, pendingNodes: map[string]*tidalv1.Node{},
		autoscalers: map[string]*tidalv1.Autoscaler{}, pendingAutoscalers: map[string]*tidalv1.Autoscaler{},
		syncedCh: make(chan struct{}), kick: make(chan struct{}, 1),
	}, nil
}

var shared struct {
	sync.Mutex
	m map[string]*Client
}

// Shared returns the one client for cfg.Address in this process (created on first use with cfg), so
// that several scheduler profiles using the plugin share one Sync stream.
func Shared(cfg Config, logger klog.Logger) (*Client, error) {
	cfg.defaults()
	shared.Lock()
	defer shared.Unlock()
	if c, ok := shared.m[cfg.Address]; ok {
		return c, nil
	}
	c, err := New(cfg, logger)
	if err != nil {
		return nil, err
	}
	if shared.m == nil {
		shared.m = map[string]*Client{}
	}
	shared.m[cfg.Address] = c
	return c, nil
}

// Address is the engine address this client dials.
func (c *Client) Address() string { return c.cfg.Address }

// Timeout is the unary call timeout.
func (c *Client) Timeout() time.Duration { return c.cfg.Timeout }

// Holder is the name this client claims the KUBERNETES door's lease with.
func (c *Client) Holder() string { return c.cfg.Holder }

// DoorHeldBy: while the engine refuses this client's Sync streams because another holder has the
// door, that holder as the engine named it (e.g. `holder "tidal-scheduler@node-b"`); else "".
func (c *Client) DoorHeldBy() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.heldBy
}

// AddHooks registers callbacks for acknowledged Sync batches and stream loss.
func (c *Client) AddHooks(h Hooks) {
	c.mu.Lock()
	c.hooks = append(c.hooks, h)
	c.mu.Unlock()
}

// Watch registers the Sync handlers on the node and pod informers (once per client; later calls
// are no-ops). Call before the informers start, or at any time: the snapshot is taken from their
// stores when a stream opens.
func (c *Client) Watch(nodes, pods cache.SharedIndexInformer) error {
	c.mu.Lock()
	if c.watching {
		c.mu.Unlock()
		return nil
	}
	c.watching = true
	c.nodeStore, c.podStore = nodes.GetStore(), pods.GetStore()
	c.mu.Unlock()
	nr, err := nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if n, ok := obj.(*v1.Node); ok {
				c.upsertNode(nil, n)
			}
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			o, _ := oldObj.(*v1.Node)
			if n, ok := newObj.(*v1.Node); ok {
				c.upsertNode(o, n)
			}
		},
		DeleteFunc: func(obj interface{}) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if n, ok := obj.(*v1.Node); ok {
				c.deleteNode(n.Name)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("node informer: %w", err)
	}
	pr, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if p, ok := obj.(*v1.Pod); ok {
				c.upsertPod(nil, p)
			}
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			o, _ := oldObj.(*v1.Pod)
			if p, ok := newObj.(*v1.Pod); ok {
				c.upsertPod(o, p)
			}
		},
		DeleteFunc: func(obj interface{}) {
			tombstone := false
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj, tombstone = d.Obj, true
			}
			if p, ok := obj.(*v1.Pod); ok {
				c.deletePod(p, tombstone)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("pod informer: %w", err)
	}
	c.mu.Lock()
	c.hasSynced = append(c.hasSynced, nr.HasSynced, pr.HasSynced)
	c.mu.Unlock()
	return nil
}

func (c *Client) upsertNode(old, n *v1.Node) {
	msg := convert.Node(n)
	if old != nil && proto.Equal(convert.Node(old), msg) {
		return // heartbeats and other status noise the engine does not model
	}
	c.mu.Lock()
	c.pendingNodes[n.Name] = msg
	c.afterChangeLocked()
	c.mu.Unlock()
}

func (c *Client) deleteNode(name string) {
	c.mu.Lock()
	c.pendingNodes[name] = nil
	c.afterChangeLocked()
	c.mu.Unlock()
}

func (c *Client) upsertPod(old, p *v1.Pod) {
	msg := convert.Pod(p)
	if old != nil && proto.Equal(convert.Pod(old), msg) {
		return
	}
	uid := string(p.UID)
	freed := old != nil && old.Spec.NodeName != "" &&
		(p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed)
	c.mu.Lock()
	prev := c.pendingPods[uid]
	c.pendingPods[uid] = podOp{pod: msg, freed: freed || prev.freed, pending: p.Spec.NodeName == "", ns: p.Namespace}
	c.afterChangeLocked()
	c.mu.Unlock()
}

// deletePod records a delete. p is the pod's final state (for a tombstone, the last one the
// informer saw).
func (c *Client) deletePod(p *v1.Pod, tombstone bool) {
	uid := string(p.UID)
	final, vanished := c.howItEnded(p, tombstone)
	c.mu.Lock()
	prev := c.pendingPods[uid]
	c.pendingPods[uid] = podOp{final: final, vanished: vanished, freed: p.Spec.NodeName != "" || prev.freed, ns: p.Namespace}
	c.afterChangeLocked()
	c.mu.Unlock()
}

func (c *Client) afterChangeLocked() {
	if len(c.pendingPods)+len(c.pendingNodes)+len(c.pendingAutoscalers) >= c.cfg.MaxBatch {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

// Start runs the Sync stream until ctx ends (once per client; later calls are no-ops). The
// snapshot waits until the watched informers have synced.
func (c *Client) Start(ctx context.Context) {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return
	}
	c.started = true
	c.mu.Unlock()
	go c.loop(ctx)
}

// Synced: a Sync stream is open, the engine has acknowledged its snapshot and the resync hooks
// have run.
func (c *Client) Synced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.synced
}

// WaitSynced blocks until Synced or ctx ends.
func (c *Client) WaitSynced(ctx context.Context) error {
	c.mu.Lock()
	ch, ok := c.syncedCh, c.synced
	c.mu.Unlock()
	if ok {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Epoch is the engine epoch of the last acknowledged snapshot ("" before the first).
func (c *Client) Epoch() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// LastError is why the last Sync stream ended (nil while none has).
func (c *Client) LastError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastErr
}
