package tidal

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

func TestPreFilterAdmitsEveryNode(t *testing.T) {
	p, err := New(context.Background(), nil, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if got := p.Name(); got != Name || Name != "Tidal" {
		t.Fatalf("Name() = %q, want %q", got, "Tidal")
	}
	pf, ok := p.(fwk.PreFilterPlugin)
	if !ok {
		t.Fatalf("%T does not implement fwk.PreFilterPlugin", p)
	}
	res, st := pf.PreFilter(context.Background(), nil, &v1.Pod{}, nil)
	if res != nil {
		t.Errorf("PreFilter result = %+v, want nil (all nodes eligible)", res)
	}
	if !st.IsSuccess() {
		t.Errorf("PreFilter status = %v, want Success", st)
	}
	if pf.PreFilterExtensions() != nil {
		t.Errorf("PreFilterExtensions() != nil")
	}
}
