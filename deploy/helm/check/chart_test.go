package check

import (
	"encoding/base64"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
)

const chartDir = "../agentrun"

// rendered is one release's manifests, by kind and name, and its NOTES.txt.
type rendered struct {
	objs  map[string]runtime.Object
	notes string
}

func (r rendered) get(t *testing.T, kind, name string) runtime.Object {
	t.Helper()
	o, ok := r.objs[kind+"/"+name]
	if !ok {
		t.Fatalf("no %s/%s rendered; have %v", kind, name, r.keys())
	}
	return o
}

func (r rendered) keys() []string {
	var ks []string
	for k := range r.objs {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart %s: %v", chartDir, err)
	}
	return ch
}

// renderErr renders the chart as `helm template rel deploy/helm/agentrun -n agentrun` would.
func renderErr(t *testing.T, vals map[string]any) (string, string, error) {
	t.Helper()
	inst := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	inst.DryRun, inst.ClientOnly, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace = "rel", "agentrun"
	rel, err := inst.Run(loadChart(t), vals)
	if err != nil {
		return "", "", err
	}
	return rel.Manifest, rel.Info.Notes, nil
}

var (
	strict    = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	converter = applyconfigurations.NewTypeConverter(scheme.Scheme)
)

// render renders the chart with vals and checks every manifest against Kubernetes' types and
// schema; it fails the test on any error.
func render(t *testing.T, vals map[string]any) rendered {
	t.Helper()
	manifest, notes, err := renderErr(t, vals)
	if err != nil {
		t.Fatalf("render with %v: %v", vals, err)
	}
	out := rendered{objs: map[string]runtime.Object{}, notes: notes}
	for _, doc := range releaseutil.SplitManifests(manifest) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		obj, key := checkManifest(t, doc, converter)
		if _, dup := out.objs[key]; dup {
			t.Errorf("%s rendered twice", key)
		}
		out.objs[key] = obj
	}
	if len(out.objs) == 0 {
		t.Fatal("the chart rendered no manifest")
	}
	return out
}

// checkManifest decodes one manifest strictly into its typed object and validates it against the
// schema, and checks names and labels by Kubernetes' own rules.
func checkManifest(t *testing.T, doc string, tc managedfields.TypeConverter) (runtime.Object, string) {
	t.Helper()
	obj, gvk, err := strict.Decode([]byte(doc), nil, nil)
	if err != nil {
		t.Fatalf("manifest does not decode strictly into a Kubernetes type: %v\n%s", err, doc)
	}
	js, err := yaml.ToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatalf("%s: %v", gvk, err)
	}
	if _, err := tc.ObjectToTyped(u); err != nil {
		t.Errorf("%s %s does not match the Kubernetes schema: %v", gvk.Kind, u.GetName(), err)
	}
	meta, err := metaOf(obj)
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range validation.IsDNS1123Subdomain(meta.Name) {
		t.Errorf("%s name %q: %s", gvk.Kind, meta.Name, msg)
	}
	checkLabels(t, gvk.Kind+" "+meta.Name, meta.Labels)
	if meta.Namespace != "" {
		t.Errorf("%s %s sets its own namespace %q (helm -n decides)", gvk.Kind, meta.Name, meta.Namespace)
	}
	return obj, gvk.Kind + "/" + meta.Name
}

func metaOf(obj runtime.Object) (*metav1.ObjectMeta, error) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return &o.ObjectMeta, nil
	case *corev1.Service:
		return &o.ObjectMeta, nil
	case *corev1.Secret:
		return &o.ObjectMeta, nil
	case *corev1.PersistentVolumeClaim:
		return &o.ObjectMeta, nil
	case *policyv1.PodDisruptionBudget:
		return &o.ObjectMeta, nil
	}
	return nil, fmt.Errorf("the chart renders a %T this check does not know: add it", obj)
}

func checkLabels(t *testing.T, what string, ls map[string]string) {
	t.Helper()
	for k, v := range ls {
		for _, msg := range validation.IsQualifiedName(k) {
			t.Errorf("%s label key %q: %s", what, k, msg)
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			t.Errorf("%s label %s=%q: %s", what, k, v, msg)
		}
	}
}

// checkPod checks a Deployment's pod: its selector selects its template, it runs non-root, and
// every probe names a port the container declares, with the path wanted.
func checkPod(t *testing.T, d *appsv1.Deployment, port string, portNumber int32) corev1.Container {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		t.Fatalf("%s selector: %v", d.Name, err)
	}
	if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("%s: selector %s does not select its pod template's labels %v", d.Name, sel, d.Spec.Template.Labels)
	}
	checkLabels(t, d.Name+" pod", d.Spec.Template.Labels)
	ps := d.Spec.Template.Spec
	if ps.SecurityContext == nil || ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot || ps.SecurityContext.RunAsUser == nil || *ps.SecurityContext.RunAsUser == 0 {
		t.Errorf("%s: pod does not run as a non-root user: %+v", d.Name, ps.SecurityContext)
	}
	if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
		t.Errorf("%s: mounts a service account token it does not use", d.Name)
	}
	if len(ps.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", d.Name, len(ps.Containers))
	}
	c := ps.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("%s: container security context %+v, want no privilege escalation and every capability dropped", d.Name, sc)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("%s: resources %+v, want CPU and memory requests and a memory limit", d.Name, c.Resources)
	}
	var declared bool
	for _, p := range c.Ports {
		if p.Name == port && p.ContainerPort == portNumber {
			declared = true
		}
		for _, msg := range validation.IsValidPortName(p.Name) {
			t.Errorf("%s port name %q: %s", d.Name, p.Name, msg)
		}
	}
	if !declared {
		t.Errorf("%s: no container port %s=%d in %+v", d.Name, port, portNumber, c.Ports)
	}
	for what, pr := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		want := map[string]string{"startup": "/healthz", "liveness": "/livez", "readiness": "/readyz"}[what]
		if pr == nil || pr.HTTPGet == nil {
			t.Errorf("%s: no %s probe over HTTP", d.Name, what)
			continue
		}
		if pr.HTTPGet.Path != want || pr.HTTPGet.Port.String() != port {
			t.Errorf("%s: %s probe GET %s on port %s, want %s on %s", d.Name, what, pr.HTTPGet.Path, pr.HTTPGet.Port.String(), want, port)
		}
	}
	for _, v := range ps.Volumes {
		for _, m := range c.VolumeMounts {
			if m.Name == v.Name && m.MountPath == "/data" && v.EmptyDir == nil && v.PersistentVolumeClaim == nil {
				t.Errorf("%s: /data is neither an emptyDir nor a claim: %+v", d.Name, v)
			}
		}
	}
	// The data folder is one the process makes inside its volume, not the volume's root (which
	// Kubernetes leaves owned by root, or world-writable for an emptyDir: agentrun refuses to
	// start on such a folder), and /tmp is writable under a read-only root.
	home := envValue(c, "AGENTRUN_HOME")
	if i := slices.Index(c.Args, "--data"); i >= 0 {
		home = c.Args[i+1]
	}
	var inVolume, tmp bool
	for _, m := range c.VolumeMounts {
		if strings.HasPrefix(home, strings.TrimSuffix(m.MountPath, "/")+"/") && home != m.MountPath {
			inVolume = true
		}
		if m.MountPath == home {
			t.Errorf("%s: the data folder %s is a volume's mount point", d.Name, home)
		}
		tmp = tmp || m.MountPath == "/tmp"
	}
	if home == "" || !inVolume || !tmp {
		t.Errorf("%s: data folder %q (in a volume: %v), /tmp mounted: %v", d.Name, home, inVolume, tmp)
	}
	return c
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// envFrom returns the Secret and key an env var comes from ("" when it is not from a Secret).
func envFrom(c corev1.Container, name string) (string, string) {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			return e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key
		}
	}
	return "", ""
}

func hasEnv(c corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name {
			return true
		}
	}
	return false
}

// secretValue is the decoded value of key in the rendered Secret name.
func secretValue(t *testing.T, r rendered, name, key string) string {
	t.Helper()
	s := r.get(t, "Secret", name).(*corev1.Secret)
	v, ok := s.Data[key]
	if !ok {
		t.Fatalf("Secret %s has no %s (keys %v)", name, key, keysOf(s.Data))
	}
	return string(v)
}

func keysOf(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// The chart passes Helm's own linter, strictly (warnings fail), with the default values and with
// PostgreSQL.
func TestLint(t *testing.T) {
	for name, vals := range map[string]map[string]any{
		"defaults": nil,
		"postgres": {"store": map[string]any{"url": "postgres://agentrun:pw@db:5432/agentrun"}},
	} {
		l := action.NewLint()
		l.Strict, l.Namespace = true, "agentrun"
		res := l.Run([]string{chartDir}, vals)
		for _, m := range res.Messages {
			t.Logf("helm lint (%s): %s", name, m)
		}
		if len(res.Errors) > 0 {
			t.Errorf("helm lint --strict (%s): %v", name, res.Errors)
		}
	}
}

// Default values: one server with its in-process runner on SQLite on its own volume, the keys
// generated into the chart's Secret, no runner pods.
func TestDefaults(t *testing.T) {
	r := render(t, nil)
	d := r.get(t, "Deployment", "rel-agentrun-server").(*appsv1.Deployment)
	c := checkPod(t, d, "http", 7340)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("server: replicas %v strategy %s, want 1 and Recreate (one ReadWriteOnce data folder)", d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	if slices.Contains(c.Args, "--no-runner") {
		t.Errorf("server args %v: without PostgreSQL the server runs its own runner", c.Args)
	}
	if want := []string{"serve", "--host", "0.0.0.0", "--port", "7340"}; !slices.Equal(c.Args[:5], want) {
		t.Errorf("server args %v, want to start with %v", c.Args, want)
	}
	if hasEnv(c, "AGENTRUN_STORE_URL") {
		t.Error("server has AGENTRUN_STORE_URL without a store configured")
	}
	if c.Image != "parcha/agentrun:latest" {
		t.Errorf("image %q", c.Image)
	}
	// The seal key and token come from the chart's Secret, generated: a 32-byte base64 key.
	for env, key := range map[string]string{"AGENTRUN_SEAL_KEY": "AGENTRUN_SEAL_KEY", "AGENTRUN_TOKEN": "AGENTRUN_TOKEN"} {
		if s, k := envFrom(c, env); s != "rel-agentrun" || k != key {
			t.Errorf("server %s from Secret %q key %q, want rel-agentrun %s", env, s, k, key)
		}
	}
	seal := secretValue(t, r, "rel-agentrun", "AGENTRUN_SEAL_KEY")
	if b, err := base64.StdEncoding.DecodeString(seal); err != nil || len(b) != 32 {
		t.Errorf("generated seal key %d chars does not decode to 32 bytes: %v", len(seal), err)
	}
	if tok := secretValue(t, r, "rel-agentrun", "AGENTRUN_TOKEN"); len(tok) < 16 {
		t.Errorf("generated token has %d characters, want 16 or more", len(tok))
	}
	if s := r.get(t, "Secret", "rel-agentrun").(*corev1.Secret); s.Annotations["helm.sh/resource-policy"] != "keep" {
		t.Error("the chart's Secret (the seal key) is not kept on uninstall")
	}
	// Two renders generate two keys: so an upgrade must read the installed one (lookup).
	if other := secretValue(t, render(t, nil), "rel-agentrun", "AGENTRUN_SEAL_KEY"); other == seal {
		t.Error("two renders made the same seal key: it is not random")
	}
	svc := r.get(t, "Service", "rel-agentrun").(*corev1.Service)
	if sel := labels.SelectorFromSet(svc.Spec.Selector); !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("Service selector %v does not select the server's pods %v", svc.Spec.Selector, d.Spec.Template.Labels)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "http" || svc.Spec.Ports[0].Port != 7340 {
		t.Errorf("Service ports %+v, want 7340 to the server's http port", svc.Spec.Ports)
	}
	pvc := r.get(t, "PersistentVolumeClaim", "rel-agentrun-server").(*corev1.PersistentVolumeClaim)
	if q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "10Gi" {
		t.Errorf("server volume %s, want 10Gi", q.String())
	}
	var claimed bool
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pvc.Name {
			claimed = true
		}
	}
	if !claimed {
		t.Error("the server does not mount its claim")
	}
	for _, k := range r.keys() {
		if strings.Contains(k, "runner") {
			t.Errorf("%s rendered without PostgreSQL (runner pods need a PostgreSQL store)", k)
		}
	}
	if !strings.Contains(r.notes, "kubectl port-forward service/rel-agentrun 7340:7340") || !strings.Contains(r.notes, "SQLite") {
		t.Errorf("NOTES.txt:\n%s", r.notes)
	}
}

// A PostgreSQL URL: the server runs --no-runner and runner pods (as many as asked) run `agentrun
// runner` with probes on --metrics-addr, no shared volume, the same seal key, and a
// PodDisruptionBudget that selects them and only them.
func TestPostgresRunners(t *testing.T) {
	const url = "postgres://agentrun:pw@db.example:5432/agentrun?sslmode=require"
	r := render(t, map[string]any{
		"store":   map[string]any{"url": url},
		"runners": map[string]any{"replicas": 7, "maxRuns": 200},
		"image":   map[string]any{"repository": "registry.example/agentrun", "tag": "1.4.0"},
		"server":  map[string]any{"trustProxy": true},
		"envFrom": []any{map[string]any{"secretRef": map[string]any{"name": "model-keys"}}},
	})
	srv := r.get(t, "Deployment", "rel-agentrun-server").(*appsv1.Deployment)
	sc := checkPod(t, srv, "http", 7340)
	if !slices.Contains(sc.Args, "--no-runner") || !slices.Contains(sc.Args, "--trust-proxy") {
		t.Errorf("server args %v, want --no-runner and --trust-proxy", sc.Args)
	}
	run := r.get(t, "Deployment", "rel-agentrun-runner").(*appsv1.Deployment)
	rc := checkPod(t, run, "metrics", 9108)
	if run.Spec.Replicas == nil || *run.Spec.Replicas != 7 {
		t.Errorf("runner replicas %v, want 7", run.Spec.Replicas)
	}
	want := []string{"runner", "--name", "$(POD_NAME)", "--data", "/data/agentrun", "--metrics-addr", "0.0.0.0:9108", "--max-runs", "200"}
	if !slices.Equal(rc.Args, want) {
		t.Errorf("runner args %v, want %v", rc.Args, want)
	}
	if rc.Env[0].Name != "POD_NAME" || rc.Env[0].ValueFrom == nil || rc.Env[0].ValueFrom.FieldRef == nil || rc.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("runner POD_NAME (its unique --name) is not the pod's name: %+v", rc.Env[0])
	}
	if rc.Image != "registry.example/agentrun:1.4.0" || sc.Image != rc.Image {
		t.Errorf("images %q and %q, want registry.example/agentrun:1.4.0 for both", sc.Image, rc.Image)
	}
	for _, c := range []corev1.Container{sc, rc} {
		if s, k := envFrom(c, "AGENTRUN_SEAL_KEY"); s != "rel-agentrun" || k != "AGENTRUN_SEAL_KEY" {
			t.Errorf("%s seal key from %q/%q", c.Name, s, k)
		}
		if s, k := envFrom(c, "AGENTRUN_STORE_URL"); s != "rel-agentrun" || k != "AGENTRUN_STORE_URL" {
			t.Errorf("%s store URL from %q/%q", c.Name, s, k)
		}
		if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "model-keys" {
			t.Errorf("%s envFrom %+v, want the model-keys Secret", c.Name, c.EnvFrom)
		}
	}
	if hasEnv(rc, "AGENTRUN_TOKEN") {
		t.Error("runners get the API token, which they do not use")
	}
	if got := secretValue(t, r, "rel-agentrun", "AGENTRUN_STORE_URL"); got != url {
		t.Errorf("store URL in the Secret = %q", got)
	}
	// No shared volume for runners: nothing but emptyDirs.
	for _, v := range run.Spec.Template.Spec.Volumes {
		if v.EmptyDir == nil {
			t.Errorf("runner volume %s is not an emptyDir: %+v", v.Name, v.VolumeSource)
		}
	}
	pdb := r.get(t, "PodDisruptionBudget", "rel-agentrun-runner").(*policyv1.PodDisruptionBudget)
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	if !sel.Matches(labels.Set(run.Spec.Template.Labels)) || sel.Matches(labels.Set(srv.Spec.Template.Labels)) {
		t.Errorf("PDB selector %s: must select the runner pods %v and not the server's %v", sel, run.Spec.Template.Labels, srv.Spec.Template.Labels)
	}
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PDB maxUnavailable %v, want 1", pdb.Spec.MaxUnavailable)
	}
	if !strings.Contains(r.notes, "7 runner pod(s)") || !strings.Contains(r.notes, "9108") {
		t.Errorf("NOTES.txt:\n%s", r.notes)
	}
	// Scaling in to none still renders (runs wait until a runner is back).
	if d := render(t, map[string]any{"store": map[string]any{"url": url}, "runners": map[string]any{"replicas": 0}}).get(t, "Deployment", "rel-agentrun-runner").(*appsv1.Deployment); *d.Spec.Replicas != 0 {
		t.Errorf("runners.replicas 0 rendered %d", *d.Spec.Replicas)
	}
}

// Existing Secrets: the seal key, token and store URL come from the user's Secrets, under their
// key names, and the chart makes none.
func TestExistingSecrets(t *testing.T) {
	r := render(t, map[string]any{
		"existingSecret": "agentrun-keys", "sealKeyKey": "seal", "tokenKey": "token",
		"store":  map[string]any{"existingSecret": "db-app", "existingSecretKey": "uri"},
		"server": map[string]any{"persistence": map[string]any{"existingClaim": "my-data"}},
	})
	for _, k := range r.keys() {
		if strings.HasPrefix(k, "Secret/") || strings.HasPrefix(k, "PersistentVolumeClaim/") {
			t.Errorf("%s rendered although existing ones were named", k)
		}
	}
	srv := checkPod(t, r.get(t, "Deployment", "rel-agentrun-server").(*appsv1.Deployment), "http", 7340)
	run := checkPod(t, r.get(t, "Deployment", "rel-agentrun-runner").(*appsv1.Deployment), "metrics", 9108)
	for _, c := range []corev1.Container{srv, run} {
		if s, k := envFrom(c, "AGENTRUN_SEAL_KEY"); s != "agentrun-keys" || k != "seal" {
			t.Errorf("%s seal key from %q/%q, want agentrun-keys/seal", c.Name, s, k)
		}
		if s, k := envFrom(c, "AGENTRUN_STORE_URL"); s != "db-app" || k != "uri" {
			t.Errorf("%s store URL from %q/%q, want db-app/uri", c.Name, s, k)
		}
	}
	if s, k := envFrom(srv, "AGENTRUN_TOKEN"); s != "agentrun-keys" || k != "token" {
		t.Errorf("token from %q/%q", s, k)
	}
	// Keys given as values land in the chart's Secret as given.
	const seal = "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80="
	r = render(t, map[string]any{"sealKey": seal, "token": "a-token-of-24-characters"})
	if got := secretValue(t, r, "rel-agentrun", "AGENTRUN_SEAL_KEY"); got != seal {
		t.Errorf("seal key %q, want the one given", got)
	}
	if got := secretValue(t, r, "rel-agentrun", "AGENTRUN_TOKEN"); got != "a-token-of-24-characters" {
		t.Errorf("token %q, want the one given", got)
	}
}

// Bad values fail the render, saying what is wrong.
func TestBadValues(t *testing.T) {
	for _, c := range []struct {
		vals map[string]any
		want string
	}{
		{map[string]any{"store": map[string]any{"url": "mysql://db/agentrun"}}, "store.url must be a postgres:// URL"},
		{map[string]any{"token": "short"}, "token must be at least 16 characters"},
		{map[string]any{"sealKey": "not-a-key"}, "sealKey must be 32 bytes as base64 or hex"},
	} {
		_, _, err := renderErr(t, c.vals)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("render %v: %v, want an error saying %q", c.vals, err, c.want)
		}
	}
}

// The check itself catches what it is for: a field Kubernetes does not have, a wrong type, a
// duplicated field.
func TestCheckCatches(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replica: 2\n  selector: {matchLabels: {a: b}}\n  template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i}]}}\n",
		"wrong type":    "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{port: http}]}\n",
		"duplicate":     "apiVersion: v1\nkind: Secret\nmetadata: {name: x}\nmetadata: {name: y}\n",
		"probe typo":    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  selector: {matchLabels: {a: b}}\n  template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i, livenessProbe: {httpGet: {path: /healthz, port: 1}, periodSecond: 3}}]}}\n",
	} {
		_, _, err := strict.Decode([]byte(doc), nil, nil)
		if err == nil {
			t.Errorf("%s: decoded without error", name)
		}
		js, _ := yaml.ToJSON([]byte(doc))
		u := &unstructured.Unstructured{}
		if u.UnmarshalJSON(js) == nil && name != "duplicate" {
			if _, err := converter.ObjectToTyped(u); err == nil {
				t.Errorf("%s: the schema accepted it", name)
			}
		}
	}
}

// Switches: no server volume (an emptyDir, no claim), no PDB, a NodePort Service, extra args.
func TestToggles(t *testing.T) {
	r := render(t, map[string]any{
		"store":   map[string]any{"url": "postgres://a@db/agentrun"},
		"server":  map[string]any{"persistence": map[string]any{"enabled": false}, "service": map[string]any{"type": "NodePort"}, "extraArgs": []any{"--log-level", "debug"}},
		"runners": map[string]any{"pdb": map[string]any{"enabled": false}, "extraArgs": []any{"--lease-ttl", "45s"}},
	})
	for _, k := range r.keys() {
		if strings.HasPrefix(k, "PersistentVolumeClaim/") || strings.HasPrefix(k, "PodDisruptionBudget/") {
			t.Errorf("%s rendered although switched off", k)
		}
	}
	d := r.get(t, "Deployment", "rel-agentrun-server").(*appsv1.Deployment)
	c := checkPod(t, d, "http", 7340)
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "data" && v.EmptyDir == nil {
			t.Errorf("server data volume %+v, want an emptyDir", v.VolumeSource)
		}
	}
	if !slices.Equal(c.Args[len(c.Args)-2:], []string{"--log-level", "debug"}) {
		t.Errorf("server args %v, want the extra args last", c.Args)
	}
	if rc := checkPod(t, r.get(t, "Deployment", "rel-agentrun-runner").(*appsv1.Deployment), "metrics", 9108); !slices.Equal(rc.Args[len(rc.Args)-2:], []string{"--lease-ttl", "45s"}) {
		t.Errorf("runner args %v, want the extra args last", rc.Args)
	}
	if svc := r.get(t, "Service", "rel-agentrun").(*corev1.Service); svc.Spec.Type != corev1.ServiceTypeNodePort {
		t.Errorf("Service type %s", svc.Spec.Type)
	}
}
