package engineclient

// Unary calls to the engine, each with a deadline (Config.Timeout), and how their errors read.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tidalv1 "github.com/tidal-sched/tidal/shim/kube/gen/tidal/v1"
)

// call runs one unary RPC under a deadline: timeout if positive and below the configured one,
// else the configured one.
func call[Q, R any](c *Client, ctx context.Context, timeout time.Duration,
	rpc func(context.Context, Q, ...grpc.CallOption) (R, error), req Q) (R, error) {
	if timeout <= 0 || timeout > c.cfg.Timeout {
		timeout = c.cfg.Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return rpc(ctx, req)
}

// CheckPod (PreEnqueue). timeout: at most the configured one (0: the configured one).
func (c *Client) CheckPod(ctx context.Context, ref *tidalv1.PodRef, timeout time.Duration) (*tidalv1.CheckPodResponse, error) {
	return call(c, ctx, timeout, c.api.CheckPod, ref)
}

// PlanPod (PreFilter).
func (c *Client) PlanPod(ctx context.Context, ref *tidalv1.PodRef) (*tidalv1.PlanResponse, error) {
	return call(c, ctx, 0, c.api.PlanPod, ref)
}

// Reserve one member's slot.
func (c *Client) Reserve(ctx context.Context, ref *tidalv1.PodRef, node string) (*tidalv1.ReserveResponse, error) {
	return call(c, ctx, 0, c.api.Reserve, &tidalv1.ReserveRequest{Pod: ref, NodeName: node})
}

// Unreserve drops the whole gang's plan; the response names the other members released.
func (c *Client) Unreserve(ctx context.Context, ref *tidalv1.PodRef) (*tidalv1.UnreserveResponse, error) {
	return call(c, ctx, 0, c.api.Unreserve, ref)
}

// Permit asks whether the gang is complete.
func (c *Client) Permit(ctx context.Context, ref *tidalv1.PodRef) (*tidalv1.PermitResponse, error) {
	return call(c, ctx, 0, c.api.Permit, ref)
}

// Preempt asks the engine for victims (PostFilter).
func (c *Client) Preempt(ctx context.Context, ref *tidalv1.PodRef) (*tidalv1.PreemptResponse, error) {
	return call(c, ctx, 0, c.api.Preempt, ref)
}

// Bound reports a binding (PostBind).
func (c *Client) Bound(ctx context.Context, ref *tidalv1.PodRef, node string) (*tidalv1.BoundResponse, error) {
	return call(c, ctx, 0, c.api.Bound, &tidalv1.ReserveRequest{Pod: ref, NodeName: node})
}

// Explain asks why a gang ("ns/gang") or pod ("ns/name") is where it is.
func (c *Client) Explain(ctx context.Context, workload string) (*tidalv1.ExplainResponse, error) {
	return call(c, ctx, 0, c.api.Explain, &tidalv1.ExplainRequest{Workload: workload})
}

// Overdue lists this scheduler's bound pods that outran their declared runtime limit (engines
// without Disruptions, which supersedes it).
func (c *Client) Overdue(ctx context.Context) (*tidalv1.OverdueResponse, error) {
	return call(c, ctx, 0, c.api.Overdue, &tidalv1.OverdueRequest{})
}

// Disruptions asks what the door should do now with the work the engine takes off GPUs (NOTICE,
// EVICT); an engine without the RPC answers Unimplemented (the caller falls back to Overdue).
func (c *Client) Disruptions(ctx context.Context, door tidalv1.FrontDoor) (*tidalv1.DisruptionsResponse, error) {
	return call(c, ctx, 0, c.api.Disruptions, &tidalv1.DisruptionsRequest{Door: door})
}

// NodeRefused reports that kube-scheduler's own filters refused the node planned for the pod.
func (c *Client) NodeRefused(ctx context.Context, ref *tidalv1.PodRef, node, plugin string, reasons []string) (*tidalv1.NodeRefusedResponse, error) {
	return call(c, ctx, 0, c.api.NodeRefused, &tidalv1.NodeRefusal{Pod: ref, NodeName: node, Plugin: plugin, Reasons: reasons})
}

// Evicted reports evictions (a preemption's, or a disruption's) and the victim workloads
// PodDisruptionBudgets protect.
func (c *Client) Evicted(ctx context.Context, req *tidalv1.EvictedRequest) (*tidalv1.EvictedResponse, error) {
	return call(c, ctx, 0, c.api.Evicted, req)
}

// TakeActivations takes the pods of the KUBERNETES door that another door's call (a Slurm Admit)
// planned ahead by fair share; the engine returns each pod once.
func (c *Client) TakeActivations(ctx context.Context) (*tidalv1.TakeActivationsResponse, error) {
	return call(c, ctx, 0, c.api.TakeActivations, &tidalv1.TakeActivationsRequest{Door: tidalv1.FrontDoor_KUBERNETES})
}

// Close ends the connection (the Sync loop ends with its context).
func (c *Client) Close() error { return c.conn.Close() }

// IsTransport reports whether err is a transport failure (engine down, unreachable, too slow) as
// opposed to a malformed request.
func IsTransport(err error) bool {
	if err == nil {
		return false
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Unknown, codes.Internal, codes.ResourceExhausted:
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// Describe renders a call error for users: "tidal-engine unreachable at ADDR (WHY)", or, for a Sync
// stream refused because another holder has the door, "tidal-engine at ADDR serves another
// scheduler: ...".
func (c *Client) Describe(err error) string {
	if holder, ok := DoorHeld(err); ok {
		if holder == "" {
			holder = "another holder"
		}
		return fmt.Sprintf("tidal-engine at %s serves another scheduler: its KUBERNETES front door is held by %s, not %s (%s)",
			c.cfg.Address, holder, c.cfg.Holder, engineMessage(err))
	}
	msg := err.Error()
	if s, ok := status.FromError(err); ok {
		msg = s.Code().String() + ": " + s.Message()
	}
	return fmt.Sprintf("tidal-engine unreachable at %s (%s)", c.cfg.Address, msg)
}
