package kubernetes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// TestTaskStoreOverlay renders the overlay of README.md's "Tasks across
// replicas: Redis" on top of the base, as kubectl kustomize would: the
// host gets OPENTOOL_TASK_STORE (its --task-store) from the generated
// Secret, and the NetworkPolicy lets the pods reach Redis and DNS, so
// that the page cannot show an overlay that does not build or does not
// do what it says.
func TestTaskStoreOverlay(t *testing.T) {
	md, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(md), "\n## Tasks across replicas: Redis\n")
	if !ok {
		t.Fatal(`README.md has no section "Tasks across replicas: Redis"`)
	}
	_, rest, ok := strings.Cut(section, "```yaml\n")
	if !ok {
		t.Fatal("the section shows no yaml block")
	}
	overlay, _, _ := strings.Cut(rest, "```")
	base, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, base) // kustomize takes no absolute resource path
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources: ["+rel+"]\n"+overlay), 0o644); err != nil {
		t.Fatal(err)
	}
	var deploy *appsv1.Deployment
	var netpol *networkingv1.NetworkPolicy
	secrets := map[string]*corev1.Secret{}
	for _, doc := range render(t, dir) {
		obj, err := decodeStrict(doc)
		if err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			deploy = o
		case *networkingv1.NetworkPolicy:
			netpol = o
		case *corev1.Secret:
			secrets[o.Name] = o
		}
	}
	if deploy == nil || netpol == nil {
		t.Fatal("the overlay lost the Deployment or the NetworkPolicy")
	}
	var store *corev1.EnvVar
	for i, e := range deploy.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "OPENTOOL_TASK_STORE" {
			store = &deploy.Spec.Template.Spec.Containers[0].Env[i]
		}
	}
	switch {
	case store == nil || store.ValueFrom == nil || store.ValueFrom.SecretKeyRef == nil:
		t.Errorf("the host gets no OPENTOOL_TASK_STORE from a Secret: %+v", store)
	case secrets[store.ValueFrom.SecretKeyRef.Name] == nil:
		t.Errorf("OPENTOOL_TASK_STORE names Secret %q, which the overlay does not make (it makes %v)", store.ValueFrom.SecretKeyRef.Name, keys(secrets))
	default:
		url := secrets[store.ValueFrom.SecretKeyRef.Name].Data[store.ValueFrom.SecretKeyRef.Key]
		if !strings.HasPrefix(string(url), "redis://") {
			t.Errorf("the Secret's %s is %q, not a Redis URL", store.ValueFrom.SecretKeyRef.Key, url)
		}
	}
	ports := map[int32]bool{}
	for _, rule := range netpol.Spec.Egress {
		for _, p := range rule.Ports {
			ports[p.Port.IntVal] = true
		}
	}
	if !ports[6379] || !ports[53] {
		t.Errorf("the NetworkPolicy's egress does not reach Redis (6379) and DNS (53): %+v", netpol.Spec.Egress)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
