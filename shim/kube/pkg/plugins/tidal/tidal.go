// Package tidal is the kube-scheduler plugin that bridges to the Tidal engine.
//
// For now it is a placeholder: it implements only PreFilter, which lets every
// pod through unchanged (nil result = all nodes eligible, Success). The engine
// client and the real extension points are added later.
package tidal

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// Name is the plugin name used in KubeSchedulerConfiguration profiles.
const Name = "Tidal"

// Plugin is the Tidal scheduler plugin.
type Plugin struct {
	handle fwk.Handle
}

var _ fwk.PreFilterPlugin = (*Plugin)(nil)

// New is the plugin factory registered with app.WithPlugin. Plugin args, when
// added, arrive in obj (decode them with frameworkruntime.DecodeInto).
func New(ctx context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	klog.FromContext(ctx).Info("Tidal plugin initialized")
	return &Plugin{handle: h}, nil
}

// Name implements fwk.Plugin.
func (p *Plugin) Name() string { return Name }

// PreFilter implements fwk.PreFilterPlugin. It does not restrict the node set.
func (p *Plugin) PreFilter(_ context.Context, _ fwk.CycleState, _ *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	return nil, fwk.NewStatus(fwk.Success)
}

// PreFilterExtensions implements fwk.PreFilterPlugin; there are none.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }
