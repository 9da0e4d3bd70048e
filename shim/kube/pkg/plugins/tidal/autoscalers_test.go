package tidal

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestHpasAreWatchedOnlyWhenTheSchedulerMayListThem(t *testing.T) {
	ctx := context.Background()
	if what, err := unlistable(ctx, fake.NewClientset()); what != "" {
		t.Fatalf("everything listable, got %q (%v)", what, err)
	}
	for _, c := range []struct{ resource, want string }{
		{"horizontalpodautoscalers", "horizontalpodautoscalers.autoscaling"},
		{"deployments", "deployments.apps"},
		{"statefulsets", "statefulsets.apps"},
	} {
		cs := fake.NewClientset()
		cs.PrependReactor("list", c.resource, func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: c.resource}, "", nil)
		})
		if what, err := unlistable(ctx, cs); what != c.want || !apierrors.IsForbidden(err) {
			t.Errorf("%s forbidden: got %q (%v), want %q", c.resource, what, err, c.want)
		}
	}
	cs := fake.NewClientset()
	cs.PrependReactor("list", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("restarting")
	})
	if what, _ := unlistable(ctx, cs); what != "" {
		t.Errorf("a transient error is not a refusal: got %q", what)
	}
}
