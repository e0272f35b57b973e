package kubernetes

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/protocol/decl"
)

// What the base promises; the checks below hold the rendered objects to
// it.
const (
	image         = "opentool-host:dev"
	replicas      = 3
	minReplicas   = 3
	maxReplicas   = 10
	runAsUser     = 65532                  // the image's user (make image)
	readinessPath = "/health?ready=1"      // 200 or 503, without a key
	livenessPath  = "/"                    // the status page: public, no data
	clientLabel   = "opentool-host/client" // pods (and namespaces) that may call the API
	monitoringNS  = "monitoring"
	// drainMargin is what the grace period must leave, beyond preStop and
	// --shutdown-timeout, for plugins to exit and the state folder to go.
	drainMargin = 5 * time.Second
)

// The host's defaults of the flags the checks read (opentool-host run --help).
const (
	defaultDrainDelay      = 0 // stop at once: the Deployment must set it
	defaultShutdownTimeout = 15 * time.Second
	defaultCallTimeout     = time.Minute
	defaultMaxConcurrency  = 64
)

// base is the rendered kustomization, one typed object per kind.
type base struct {
	deploy  *appsv1.Deployment
	svc     *corev1.Service
	hpa     *autoscalingv2.HorizontalPodAutoscaler
	pdb     *policyv1.PodDisruptionBudget
	netpol  *networkingv1.NetworkPolicy
	cms     map[string]*corev1.ConfigMap // by name
	secrets map[string]*corev1.Secret    // by name
}

// decoder decodes YAML or JSON strictly into the k8s.io/api types of the
// kinds the base may hold: an unknown or duplicate field (names match
// exactly, as the API server's strict field validation does) and an
// unknown apiVersion/kind are errors.
var decoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{appsv1.AddToScheme, corev1.AddToScheme, autoscalingv2.AddToScheme, policyv1.AddToScheme, networkingv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}()

// decodeStrict decodes one object.
func decodeStrict(doc []byte) (runtime.Object, error) {
	obj, gvk, err := decoder.Decode(doc, nil, nil)
	if err != nil {
		if gvk != nil {
			return nil, fmt.Errorf("%s: %w", gvk.Kind, err)
		}
		return nil, err
	}
	return obj, nil
}

// render renders the kustomization in dir as kubectl kustomize does and
// returns each object's YAML.
func render(t *testing.T, dir string) [][]byte {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var docs [][]byte
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatalf("%s: %v", r.CurId(), err)
		}
		docs = append(docs, y)
	}
	return docs
}

// load renders the base and decodes every object strictly.
func load(t *testing.T) *base {
	t.Helper()
	b := &base{cms: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
	for _, doc := range render(t, ".") {
		obj, err := decodeStrict(doc)
		if err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			setOnce(t, &b.deploy, o, doc)
		case *corev1.Service:
			setOnce(t, &b.svc, o, doc)
		case *autoscalingv2.HorizontalPodAutoscaler:
			setOnce(t, &b.hpa, o, doc)
		case *policyv1.PodDisruptionBudget:
			setOnce(t, &b.pdb, o, doc)
		case *networkingv1.NetworkPolicy:
			setOnce(t, &b.netpol, o, doc)
		case *corev1.ConfigMap:
			b.cms[o.Name] = o
		case *corev1.Secret:
			b.secrets[o.Name] = o
		default:
			t.Fatalf("%T: a kind the checks do not know:\n%s", obj, doc)
		}
	}
	if b.deploy == nil || b.svc == nil || b.hpa == nil || b.pdb == nil || b.netpol == nil || len(b.cms) == 0 || len(b.secrets) == 0 {
		t.Fatalf("the base lacks a Deployment, Service, HorizontalPodAutoscaler, PodDisruptionBudget, NetworkPolicy, ConfigMap or Secret")
	}
	return b
}

// setOnce sets *dst to o, failing t when the base had one already: the
// checks expect one object of each kind but ConfigMap and Secret.
func setOnce[T any](t *testing.T, dst **T, o *T, doc []byte) {
	t.Helper()
	if *dst != nil {
		t.Fatalf("two objects of one kind; the checks expect one:\n%s", doc)
	}
	*dst = o
}

// TestBase renders the kustomization, decodes every object strictly and
// checks that the objects fit together, that the host accepts the files
// they hold, and what the base promises (see faults).
func TestBase(t *testing.T) {
	b := load(t)
	for _, f := range faults(b) {
		t.Error(f)
	}
}

// TestStrictDecoding shows that decodeStrict refuses what the API server
// would refuse under strict field validation (and what a plain decode
// would let through silently).
func TestStrictDecoding(t *testing.T) {
	const ok = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replicas: 3\n"
	if _, err := decodeStrict([]byte(ok)); err != nil {
		t.Fatalf("a valid object: %v", err)
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"unknown field", strings.Replace(ok, "replicas: 3", "replica: 3", 1), `unknown field "spec.replica"`},
		{"wrong case", strings.Replace(ok, "replicas: 3", "Replicas: 3", 1), `unknown field "spec.Replicas"`},
		{"duplicate field", ok + "  replicas: 4\n", `"replicas" already set`},
		{"unknown field deep down", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  ports: [{port: 80, targetPorts: 8080}]\n", `unknown field "spec.ports[0].targetPorts"`},
		{"unknown kind", "apiVersion: apps/v1\nkind: Deployments\nmetadata: {name: x}\n", `no kind "Deployments"`},
		{"unknown version", "apiVersion: autoscaling/v9\nkind: HorizontalPodAutoscaler\nmetadata: {name: x}\n", `autoscaling/v9`},
		{"wrong type", strings.Replace(ok, "replicas: 3", "replicas: three", 1), `replicas`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeStrict([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestChecksCatch breaks the rendered base one way at a time and expects
// faults to name the break: the checks of TestBase can fail.
func TestChecksCatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(b *base)
		want   string
	}{
		{"two replicas", func(b *base) { b.deploy.Spec.Replicas = new(int32(2)) }, "replicas 2"},
		{"grace shorter than the drain", func(b *base) { b.deploy.Spec.Template.Spec.TerminationGracePeriodSeconds = new(int64(20)) }, "terminationGracePeriodSeconds 20"},
		{"longer shutdown timeout", func(b *base) { setArg(b, "--shutdown-timeout", "40s") }, "terminationGracePeriodSeconds 30"},
		{"longer drain delay", func(b *base) { setArg(b, "--drain-delay", "10s") }, "terminationGracePeriodSeconds 30"},
		{"no drain delay", func(b *base) { setArg(b, "--drain-delay", "0s") }, "--drain-delay is 0"},
		{"readiness on the metrics port", func(b *base) {
			ctr(b).ReadinessProbe.HTTPGet.Port = intstr.FromString("metrics")
		}, "readinessProbe port metrics is 9628"},
		{"readiness behind the keys", func(b *base) { ctr(b).ReadinessProbe.HTTPGet.Path = "/health" }, "readinessProbe path /health"},
		{"liveness behind the keys", func(b *base) { ctr(b).LivenessProbe.HTTPGet.Path = "/opentool/version" }, "livenessProbe path /opentool/version"},
		{"liveness on a port the container lacks", func(b *base) { ctr(b).LivenessProbe.HTTPGet.Port = intstr.FromInt32(8080) }, "livenessProbe port 8080 is no container port"},
		{"root", func(b *base) { ctr(b).SecurityContext.RunAsUser = new(int64(0)) }, "runAsUser 0"},
		{"writable root", func(b *base) { ctr(b).SecurityContext.ReadOnlyRootFilesystem = new(false) }, "readOnlyRootFilesystem"},
		{"addr on loopback", func(b *base) { setArg(b, "--addr", "127.0.0.1:9627") }, "loopback"},
		{"addr port differs", func(b *base) { setArg(b, "--addr", "0.0.0.0:9000") }, "--addr port 9000"},
		{"declaration not mounted", func(b *base) {
			m := ctr(b).VolumeMounts
			ctr(b).VolumeMounts = slices.DeleteFunc(m, func(v corev1.VolumeMount) bool { return v.SubPath == "mock.policy.json" })
		}, `"mock.policy.json" is not mounted`},
		{"mount of a missing key", func(b *base) {
			ctr(b).VolumeMounts = append(ctr(b).VolumeMounts, corev1.VolumeMount{Name: "plugins", MountPath: "/plugins/x.policy.json", SubPath: "x.policy.json"})
		}, `"x.policy.json"`},
		{"declaration the host refuses", func(b *base) {
			cm := pluginsConfigMap(b)
			cm.Data["calculator.policy.json"] = `{"timeout_ms": 5000, "max_concurency": 4}`
		}, "max_concurency"},
		{"policy beyond the host's flags", func(b *base) {
			pluginsConfigMap(b).Data["calculator.policy.json"] = `{"timeout_ms": 120000}`
		}, "exceeds --call-timeout"},
		{"not a declaration", func(b *base) { pluginsConfigMap(b).Data["notes.txt"] = "hi" }, `"notes.txt"`},
		{"keys file with a plain key", func(b *base) {
			b.secrets["opentool-host-keys"].Data["keys.json"] = []byte(`{"keys":[{"name":"a","key":"secret-in-git","allow":["*"]}]}`)
		}, "plain key"},
		{"keys file path not mounted", func(b *base) { setArg(b, "--api-keys-file", "/etc/keys.json") }, "--api-keys-file /etc/keys.json"},
		{"keys file mounted with subPath", func(b *base) {
			for i, m := range ctr(b).VolumeMounts {
				if m.Name == "keys" {
					ctr(b).VolumeMounts[i].MountPath, ctr(b).VolumeMounts[i].SubPath = "/etc/opentool-host/keys.json", "keys.json"
				}
			}
		}, "subPath"},
		{"state on the root filesystem", func(b *base) { setArg(b, "--state-dir", "/var/state") }, "--state-dir /var/state"},
		{"Service selects other pods", func(b *base) { b.svc.Spec.Selector = map[string]string{"app": "other"} }, "Service selector"},
		{"Service port to nowhere", func(b *base) { b.svc.Spec.Ports[1].TargetPort = intstr.FromString("metric") }, "metric"},
		{"PDB selects other pods", func(b *base) { b.pdb.Spec.Selector.MatchLabels = map[string]string{"app": "other"} }, "PodDisruptionBudget selector"},
		{"PDB blocks drains", func(b *base) {
			b.pdb.Spec.MaxUnavailable, b.pdb.Spec.MinAvailable = nil, new(intstr.FromInt32(3))
		}, "PodDisruptionBudget"},
		{"HPA targets something else", func(b *base) { b.hpa.Spec.ScaleTargetRef.Name = "other" }, "scaleTargetRef"},
		{"HPA without a CPU request", func(b *base) { delete(ctr(b).Resources.Requests, corev1.ResourceCPU) }, "CPU request"},
		{"NetworkPolicy peer with a kustomize label", func(b *base) {
			b.netpol.Spec.Ingress[0].From[0].PodSelector.MatchLabels["team"] = "x"
		}, "from peers"},
		{"NetworkPolicy opens another port", func(b *base) {
			b.netpol.Spec.Ingress[0].Ports = append(b.netpol.Spec.Ingress[0].Ports, networkingv1.NetworkPolicyPort{Port: new(intstr.FromInt32(22))})
		}, "port 22"},
		{"NetworkPolicy egress", func(b *base) {
			b.netpol.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}}
		}, "egress"},
		{"bad label", func(b *base) { b.svc.Labels["bad key!"] = "x" }, "bad key!"},
		{"image tag", func(b *base) { ctr(b).Image = "opentool-host:latest" }, "opentool-host:latest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := load(t)
			if fs := faults(b); len(fs) != 0 {
				t.Fatalf("the base itself has faults: %v", fs)
			}
			tc.mutate(b)
			fs := faults(b)
			for _, f := range fs {
				if strings.Contains(f, tc.want) {
					t.Logf("caught: %s", f)
					return
				}
			}
			t.Fatalf("faults %q, want one containing %q", fs, tc.want)
		})
	}
}

// ctr is the Deployment's container.
func ctr(b *base) *corev1.Container { return &b.deploy.Spec.Template.Spec.Containers[0] }

// setArg sets flag name of the container's args to value.
func setArg(b *base, name, value string) {
	c := ctr(b)
	for i, a := range c.Args {
		if a == name || strings.HasPrefix(a, name+"=") {
			c.Args = slices.Delete(c.Args, i, i+1+btoi(a == name))
			break
		}
	}
	c.Args = append(c.Args, name+"="+value)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// pluginsConfigMap is the ConfigMap of the Deployment's "plugins" volume.
func pluginsConfigMap(b *base) *corev1.ConfigMap {
	for _, v := range b.deploy.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil {
			return b.cms[v.ConfigMap.Name]
		}
	}
	return nil
}

// arg returns the value of flag name in args ("--name=V" or "--name V")
// and whether it is there.
func arg(args []string, name string) (string, bool) {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
		if a == name && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// durationArg returns the duration of flag name in args, or def when it
// is not there.
func durationArg(args []string, name string, def time.Duration) (time.Duration, error) {
	v, ok := arg(args, name)
	if !ok {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", name, v, err)
	}
	return d, nil
}

// faults lists every way b breaks what the base promises, each naming
// the object and the field.
func faults(b *base) []string {
	var fs []string
	add := func(format string, a ...any) { fs = append(fs, fmt.Sprintf(format, a...)) }
	d := b.deploy
	pod := &d.Spec.Template.Spec
	podLabels := labels.Set(d.Spec.Template.Labels)

	// Labels and selectors are valid label keys and values.
	for _, m := range []metav1.ObjectMeta{d.ObjectMeta, d.Spec.Template.ObjectMeta, b.svc.ObjectMeta, b.hpa.ObjectMeta, b.pdb.ObjectMeta, b.netpol.ObjectMeta} {
		for k, v := range m.Labels {
			for _, e := range append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...) {
				add("%s label %q=%q: %s", m.Name, k, v, e)
			}
		}
	}
	selects := func(what string, sel *metav1.LabelSelector) {
		s, err := metav1.LabelSelectorAsSelector(sel)
		switch {
		case err != nil:
			add("%s: %v", what, err)
		case s.Empty() || !s.Matches(podLabels):
			add("%s %v does not select the pods (labels %v)", what, sel, podLabels)
		}
	}

	// Deployment.
	if d.Spec.Replicas == nil || *d.Spec.Replicas != replicas {
		add("Deployment replicas %d, want %d", deref(d.Spec.Replicas), replicas)
	}
	selects("Deployment selector", d.Spec.Selector)
	if len(pod.Containers) != 1 {
		add("Deployment: %d containers, want 1", len(pod.Containers))
		return fs
	}
	c := &pod.Containers[0]
	if c.Image != image {
		add("Deployment image %s, want %s", c.Image, image)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		add("Deployment: automountServiceAccountToken must be false (the host never calls the API server)")
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	// portOf resolves a named or numbered port to a container port.
	portOf := func(what string, p intstr.IntOrString) int32 {
		if p.Type == intstr.String {
			n, ok := ports[p.StrVal]
			if !ok {
				add("%s port %s is no container port", what, p.StrVal)
			}
			return n
		}
		if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.ContainerPort == p.IntVal }) {
			add("%s port %d is no container port", what, p.IntVal)
		}
		return p.IntVal
	}

	// The arguments: a run on the ports the container declares.
	if len(c.Args) == 0 || c.Args[0] != "run" {
		add("Deployment args %q must start with run", c.Args)
	}
	for flag, port := range map[string]string{"--addr": "http", "--metrics-addr": "metrics"} {
		v, _ := arg(c.Args, flag)
		h, p, err := net.SplitHostPort(v)
		if err != nil {
			add("Deployment %s %q: %v", flag, v, err)
			continue
		}
		if ip := net.ParseIP(h); h == "localhost" || ip != nil && ip.IsLoopback() {
			add("Deployment %s %s is loopback: the Service cannot reach it", flag, v)
		}
		if p != strconv.Itoa(int(ports[port])) {
			add("Deployment %s port %s, but container port %q is %d", flag, p, port, ports[port])
		}
	}
	dir, ok := arg(c.Args, "--dir")
	if !ok {
		add("Deployment args lack --dir")
	}

	// Probes: on the API port, on paths that answer kubelet, which sends
	// no key: readiness on the host's readiness route.
	httpPort := ports["http"]
	if httpPort == 0 {
		add("Deployment: no container port named http")
	}
	probe := func(what string, p *corev1.Probe, path string) {
		switch {
		case p == nil:
			add("Deployment: no %s", what)
		case p.HTTPGet == nil:
			add("%s is not an httpGet of %s", what, path)
		case p.HTTPGet.Path != path:
			add("%s path %s, want %s (the API's other routes want a key, which kubelet cannot send)", what, p.HTTPGet.Path, path)
		default:
			if n := portOf(what, p.HTTPGet.Port); n != httpPort {
				add("%s port %s is %d, not the API port %d", what, p.HTTPGet.Port.String(), n, httpPort)
			}
		}
	}
	probe("readinessProbe", c.ReadinessProbe, readinessPath)
	probe("livenessProbe", c.LivenessProbe, livenessPath)
	if c.StartupProbe != nil {
		probe("startupProbe", c.StartupProbe, livenessPath)
	}

	// Drain: the grace period covers preStop, --drain-delay and
	// --shutdown-timeout.
	drain, err := durationArg(c.Args, "--drain-delay", defaultDrainDelay)
	if err != nil {
		add("Deployment: %v", err)
	}
	if drain == 0 {
		add("Deployment: --drain-delay is 0 (the host's default): the listener closes at SIGTERM, before readiness has said draining")
	}
	shutdown, err := durationArg(c.Args, "--shutdown-timeout", defaultShutdownTimeout)
	if err != nil {
		add("Deployment: %v", err)
	}
	var preStop time.Duration
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		if s := c.Lifecycle.PreStop.Sleep; s != nil {
			preStop = time.Duration(s.Seconds) * time.Second
		} else {
			add("preStop is not a sleep action (the image has no shell for exec)")
		}
	}
	grace := time.Duration(deref(pod.TerminationGracePeriodSeconds)) * time.Second
	if pod.TerminationGracePeriodSeconds == nil {
		grace = 30 * time.Second // the API's default
	}
	if grace < preStop+drain+shutdown+drainMargin {
		add("Deployment terminationGracePeriodSeconds %d < preStop %v + --drain-delay %v + --shutdown-timeout %v + %v", int64(grace/time.Second), preStop, drain, shutdown, drainMargin)
	}

	// Security: non-root, read-only root, nothing to escalate.
	sc, psc := c.SecurityContext, pod.SecurityContext
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	if !deref(first(sc.RunAsNonRoot, psc.RunAsNonRoot)) {
		add("Deployment: runAsNonRoot is not true")
	}
	if u := first(sc.RunAsUser, psc.RunAsUser); deref(u) != runAsUser {
		add("Deployment runAsUser %d, want %d", deref(u), runAsUser)
	}
	if !deref(sc.ReadOnlyRootFilesystem) {
		add("Deployment: readOnlyRootFilesystem is not true")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || deref(sc.Privileged) {
		add("Deployment: allowPrivilegeEscalation must be false, and privileged unset or false")
	}
	if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) != 0 {
		add("Deployment: capabilities must drop ALL and add none")
	}
	if sp := first(sc.SeccompProfile, psc.SeccompProfile); sp == nil || sp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		add("Deployment: seccompProfile must be RuntimeDefault")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		add("Deployment resources: want CPU and memory requests and a memory limit")
	}

	// Volumes: writable folders on emptyDirs, keys from the Secret, plugin
	// declarations from the ConfigMap.
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	// mountOf returns the mount holding file p and p relative to it.
	mountOf := func(p string) (corev1.VolumeMount, string, bool) {
		for _, m := range c.VolumeMounts {
			if rel, ok := strings.CutPrefix(p, strings.TrimSuffix(m.MountPath, "/")+"/"); ok || p == m.MountPath {
				return m, rel, true
			}
		}
		return corev1.VolumeMount{}, "", false
	}
	emptyDir := func(what, p string) {
		if m, _, ok := mountOf(p); !ok || volumes[m.Name].EmptyDir == nil || m.ReadOnly {
			add("Deployment %s %s is not on a writable emptyDir (the root filesystem is read-only)", what, p)
		}
	}
	state, ok := arg(c.Args, "--state-dir")
	if !ok {
		add("Deployment args lack --state-dir (its default is under TMPDIR, which must then be an emptyDir)")
	}
	emptyDir("--state-dir", state)
	emptyDir("TMPDIR", "/tmp")

	faultsKeys(b, c, volumes, mountOf, add)
	faultsPlugins(b, c, dir, volumes, add)

	// Service: the pods, the API and metrics ports.
	if b.svc.Spec.Type != corev1.ServiceTypeClusterIP && b.svc.Spec.Type != "" {
		add("Service type %s, want ClusterIP", b.svc.Spec.Type)
	}
	selects("Service selector", &metav1.LabelSelector{MatchLabels: b.svc.Spec.Selector})
	svcPorts := map[int32]int32{}
	for _, p := range b.svc.Spec.Ports {
		svcPorts[p.Port] = portOf("Service port "+p.Name, p.TargetPort)
	}
	for _, name := range []string{"http", "metrics"} {
		if n := ports[name]; svcPorts[n] != n {
			add("Service: port %d does not lead to container port %s (%d)", n, name, n)
		}
	}

	// HorizontalPodAutoscaler: this Deployment, on CPU, from the replicas.
	h := b.hpa.Spec
	if ref := h.ScaleTargetRef; ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != d.Name {
		add("HorizontalPodAutoscaler scaleTargetRef %s %s %s, want apps/v1 Deployment %s", ref.APIVersion, ref.Kind, ref.Name, d.Name)
	}
	if deref(h.MinReplicas) != minReplicas || h.MaxReplicas != maxReplicas || deref(h.MinReplicas) != deref(d.Spec.Replicas) {
		add("HorizontalPodAutoscaler min %d max %d, want %d and %d, min equal to the Deployment's replicas", deref(h.MinReplicas), h.MaxReplicas, minReplicas, maxReplicas)
	}
	if !slices.ContainsFunc(h.Metrics, func(m autoscalingv2.MetricSpec) bool {
		return m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Target.Type == autoscalingv2.UtilizationMetricType && deref(m.Resource.Target.AverageUtilization) > 0
	}) {
		add("HorizontalPodAutoscaler: no CPU utilization target")
	}
	if c.Resources.Requests.Cpu().IsZero() {
		add("HorizontalPodAutoscaler: CPU utilization needs a CPU request on the container")
	}

	// PodDisruptionBudget: the pods, and a drain can always proceed.
	selects("PodDisruptionBudget selector", b.pdb.Spec.Selector)
	switch p := b.pdb.Spec; {
	case p.MaxUnavailable != nil && p.MinAvailable == nil:
		if p.MaxUnavailable.Type != intstr.Int || p.MaxUnavailable.IntVal < 1 {
			add("PodDisruptionBudget maxUnavailable %s, want a number >= 1", p.MaxUnavailable.String())
		}
	case p.MinAvailable != nil && p.MaxUnavailable == nil:
		if p.MinAvailable.Type != intstr.Int || p.MinAvailable.IntVal >= minReplicas {
			add("PodDisruptionBudget minAvailable %s blocks every drain at %d replicas", p.MinAvailable.String(), minReplicas)
		}
	default:
		add("PodDisruptionBudget: want exactly one of minAvailable and maxUnavailable")
	}

	faultsNetworkPolicy(b, portOf, selects, add)
	return fs
}

// faultsKeys checks the API keys file: the --api-keys-file path is a key
// of the Secret, mounted as a folder (so updates reach the pod), and the
// file is one the host accepts, holding hashes only.
func faultsKeys(b *base, c *corev1.Container, volumes map[string]corev1.Volume, mountOf func(string) (corev1.VolumeMount, string, bool), add func(string, ...any)) {
	file, ok := arg(c.Args, "--api-keys-file")
	m, rel, mounted := mountOf(file)
	v := volumes[m.Name]
	switch {
	case !ok:
		add("Deployment args lack --api-keys-file: the host would serve without keys")
		return
	case !mounted || v.Secret == nil:
		add("Deployment --api-keys-file %s is not in a mounted Secret", file)
		return
	case m.SubPath != "" || rel == "":
		add("Deployment: the Secret of --api-keys-file is mounted with subPath: kubelet never updates it, so the host cannot reload changed keys")
		return
	}
	key := rel
	if len(v.Secret.Items) > 0 {
		key = ""
		for _, it := range v.Secret.Items {
			if it.Path == rel {
				key = it.Key
			}
		}
	}
	s, ok := b.secrets[v.Secret.SecretName]
	if !ok || key == "" {
		add("Deployment --api-keys-file %s: Secret %s has no item for %s", file, v.Secret.SecretName, rel)
		return
	}
	data, ok := s.Data[key]
	if !ok {
		add("Secret %s has no key %s (--api-keys-file %s)", s.Name, key, file)
		return
	}
	f, err := access.ParseFile(data)
	if err != nil {
		add("Secret %s key %s: the host refuses it: %v", s.Name, key, err)
		return
	}
	for _, k := range f.Keys {
		if k.Key != "" {
			add("Secret %s key %s: entry %s holds a plain key; the base keeps only sha256 hashes", s.Name, key, k.Name)
		}
	}
}

// faultsPlugins checks the plugin declarations: every ConfigMap key is a
// declaration the host accepts within the Deployment's flags, mounted by
// subPath into --dir, and every such mount names a key.
func faultsPlugins(b *base, c *corev1.Container, dir string, volumes map[string]corev1.Volume, add func(string, ...any)) {
	var vol corev1.Volume
	for _, v := range volumes {
		if v.ConfigMap != nil {
			vol = v
		}
	}
	if vol.ConfigMap == nil || b.cms[vol.ConfigMap.Name] == nil {
		add("Deployment: no ConfigMap volume of the base's plugin declarations")
		return
	}
	cm := b.cms[vol.ConfigMap.Name]
	callTimeout, err := durationArg(c.Args, "--call-timeout", defaultCallTimeout)
	if err != nil {
		add("Deployment: %v", err)
	}
	maxConc := defaultMaxConcurrency
	if v, ok := arg(c.Args, "--max-concurrency"); ok {
		if maxConc, err = strconv.Atoi(v); err != nil {
			add("Deployment --max-concurrency: %v", err)
		}
	}
	mounted := map[string]bool{}
	for _, m := range c.VolumeMounts {
		if m.Name != vol.Name {
			continue
		}
		if _, ok := cm.Data[m.SubPath]; m.SubPath == "" || !ok {
			add("Deployment mount %s: %q is no key of ConfigMap %s (a whole-ConfigMap mount over --dir would hide the image's plugins)", m.MountPath, m.SubPath, cm.Name)
			continue
		}
		if m.MountPath != path.Join(dir, m.SubPath) {
			add("Deployment mount %s of %s: not in --dir %s", m.MountPath, m.SubPath, dir)
		}
		mounted[m.SubPath] = true
	}
	for _, name := range slices.Sorted(maps.Keys(cm.Data)) {
		data := []byte(cm.Data[name])
		if !mounted[name] {
			add("ConfigMap %s key %q is not mounted into --dir", cm.Name, name)
		}
		var err error
		switch {
		case strings.HasSuffix(name, decl.PolicySuffix):
			var p *decl.Policy
			if p, err = decl.ParsePolicy(data); err == nil {
				if time.Duration(p.TimeoutMS)*time.Millisecond > callTimeout {
					err = fmt.Errorf("timeout_ms %d exceeds --call-timeout %v", p.TimeoutMS, callTimeout)
				} else if p.MaxConcurrency > maxConc {
					err = fmt.Errorf("max_concurrency %d exceeds --max-concurrency %d", p.MaxConcurrency, maxConc)
				}
			}
		case strings.HasSuffix(name, decl.ToolsSuffix):
			_, err = decl.ParseCommands(data)
		case strings.HasSuffix(name, decl.MCPSuffix):
			_, err = decl.ParseMCP(data)
		default:
			err = errors.New("not a declaration the host reads (NAME.policy.json, NAME.tools.json, NAME.mcp.json)")
		}
		if err != nil {
			add("ConfigMap %s key %q: %v", cm.Name, name, err)
		}
	}
	if len(cm.Data) == 0 || len(cm.BinaryData) != 0 {
		add("ConfigMap %s: want declarations in data, none in binaryData", cm.Name)
	}
}

// faultsNetworkPolicy checks the NetworkPolicy: the pods; the API port
// from labelled clients, the metrics port from the monitoring namespace,
// nothing else in; nothing out.
func faultsNetworkPolicy(b *base, portOf func(string, intstr.IntOrString) int32, selects func(string, *metav1.LabelSelector), add func(string, ...any)) {
	np := b.netpol.Spec
	selects("NetworkPolicy podSelector", &np.PodSelector)
	if !slices.Contains(np.PolicyTypes, networkingv1.PolicyTypeIngress) || !slices.Contains(np.PolicyTypes, networkingv1.PolicyTypeEgress) {
		add("NetworkPolicy policyTypes %v, want Ingress and Egress", np.PolicyTypes)
	}
	if len(np.Egress) != 0 {
		add("NetworkPolicy: %d egress rules, want none (plugins do not call out)", len(np.Egress))
	}
	client := map[string]string{clientLabel: "true"}
	monitoring := map[string]string{"kubernetes.io/metadata.name": monitoringNS}
	var apiPort, metricsPort int32
	for _, p := range b.deploy.Spec.Template.Spec.Containers[0].Ports {
		switch p.Name {
		case "http":
			apiPort = p.ContainerPort
		case "metrics":
			metricsPort = p.ContainerPort
		}
	}
	open := map[int32]bool{}
	for i, r := range np.Ingress {
		if len(r.Ports) == 0 || len(r.From) == 0 {
			add("NetworkPolicy ingress[%d] allows every port or every peer", i)
			continue
		}
		for _, p := range r.Ports {
			if p.Port == nil || p.EndPort != nil {
				add("NetworkPolicy ingress[%d]: a port range or every port", i)
				continue
			}
			n := portOf(fmt.Sprintf("NetworkPolicy ingress[%d]", i), *p.Port)
			open[n] = true
			for _, peer := range r.From {
				ok := peer.IPBlock == nil
				switch n {
				case apiPort:
					ok = ok && (peer.PodSelector != nil && maps.Equal(peer.PodSelector.MatchLabels, client) && len(peer.PodSelector.MatchExpressions) == 0) &&
						(peer.NamespaceSelector == nil || maps.Equal(peer.NamespaceSelector.MatchLabels, client) && len(peer.NamespaceSelector.MatchExpressions) == 0)
				case metricsPort:
					ok = ok && peer.PodSelector == nil && peer.NamespaceSelector != nil && maps.Equal(peer.NamespaceSelector.MatchLabels, monitoring)
				default:
					ok = false
					add("NetworkPolicy ingress[%d] opens port %d, neither the API (%d) nor metrics (%d)", i, n, apiPort, metricsPort)
				}
				if !ok {
					add("NetworkPolicy ingress[%d] from peers of port %d: want pods labelled %v (namespaces too, if any), or the %s namespace for metrics", i, n, client, monitoringNS)
				}
			}
		}
	}
	if !open[apiPort] || !open[metricsPort] {
		add("NetworkPolicy: want ingress to ports %d and %d, have %v", apiPort, metricsPort, open)
	}
}

// deref is *p, or the zero value for nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// first is the first non-nil pointer.
func first[T any](ps ...*T) *T {
	for _, p := range ps {
		if p != nil {
			return p
		}
	}
	return nil
}
