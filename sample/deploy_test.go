package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/leasehold/leasehold/coordination"
	"github.com/leasehold/leasehold/identity"
)

// The parts of the Kubernetes types that deploy/*.yaml uses, with the
// API's field names (k8s.io/api apps/v1, policy/v1, networking.k8s.io/v1,
// core/v1). Decoding rejects any other field, so a misspelt or misplaced
// field fails the test.
type (
	k8sManifest struct {
		APIVersion string          `json:"apiVersion"`
		Kind       string          `json:"kind"`
		Metadata   k8sMeta         `json:"metadata"`
		Spec       json.RawMessage `json:"spec"`
	}
	k8sMeta struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	}
	k8sSelector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	}
	k8sDeploymentSpec struct {
		Replicas int         `json:"replicas"`
		Selector k8sSelector `json:"selector"`
		Strategy struct {
			Type          string `json:"type"`
			RollingUpdate struct {
				MaxSurge       json.RawMessage `json:"maxSurge"`
				MaxUnavailable json.RawMessage `json:"maxUnavailable"`
			} `json:"rollingUpdate"`
		} `json:"strategy"`
		Template struct {
			Metadata k8sMeta    `json:"metadata"`
			Spec     k8sPodSpec `json:"spec"`
		} `json:"template"`
	}
	k8sPodSpec struct {
		TerminationGracePeriodSeconds int            `json:"terminationGracePeriodSeconds"`
		Containers                    []k8sContainer `json:"containers"`
	}
	k8sContainer struct {
		Name           string    `json:"name"`
		Image          string    `json:"image"`
		Env            []k8sEnv  `json:"env"`
		Ports          []k8sPort `json:"ports"`
		LivenessProbe  *k8sProbe `json:"livenessProbe"`
		ReadinessProbe *k8sProbe `json:"readinessProbe"`
		Resources      struct {
			Requests map[string]string `json:"requests"`
		} `json:"resources"`
		SecurityContext struct {
			RunAsNonRoot             bool `json:"runAsNonRoot"`
			AllowPrivilegeEscalation bool `json:"allowPrivilegeEscalation"`
			ReadOnlyRootFilesystem   bool `json:"readOnlyRootFilesystem"`
		} `json:"securityContext"`
	}
	k8sEnv struct {
		Name      string `json:"name"`
		Value     string `json:"value"`
		ValueFrom *struct {
			FieldRef *struct {
				FieldPath string `json:"fieldPath"`
			} `json:"fieldRef"`
			SecretKeyRef *struct {
				Name string `json:"name"`
				Key  string `json:"key"`
			} `json:"secretKeyRef"`
		} `json:"valueFrom"`
	}
	k8sPort struct {
		Name          string `json:"name"`
		ContainerPort int    `json:"containerPort"`
		Protocol      string `json:"protocol"`
	}
	k8sProbe struct {
		HTTPGet struct {
			Path string          `json:"path"`
			Port json.RawMessage `json:"port"`
		} `json:"httpGet"`
		PeriodSeconds    int `json:"periodSeconds"`
		FailureThreshold int `json:"failureThreshold"`
		TimeoutSeconds   int `json:"timeoutSeconds"`
	}
	k8sPDBSpec struct {
		MaxUnavailable json.RawMessage `json:"maxUnavailable"`
		Selector       k8sSelector     `json:"selector"`
	}
	k8sNetworkPolicySpec struct {
		PodSelector k8sSelector `json:"podSelector"`
		PolicyTypes []string    `json:"policyTypes"`
		Ingress     []struct {
			From []struct {
				PodSelector *k8sSelector `json:"podSelector"`
			} `json:"from"`
			Ports []struct {
				Protocol string          `json:"protocol"`
				Port     json.RawMessage `json:"port"`
			} `json:"ports"`
		} `json:"ingress"`
	}
)

// decodeStrict decodes b into v, failing on fields v does not have.
func decodeStrict(t *testing.T, what string, b []byte, v any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		t.Fatalf("%s: %v: a field the Kubernetes API does not have there, or one deploy_test.go does not know yet", what, err)
	}
}

// readManifests lints each deploy/*.yaml with yamllint (strict: warnings
// fail) and returns its documents by kind, read through Python's yaml
// module, which yamllint depends on. Without yamllint the test is skipped.
func readManifests(t *testing.T) map[string]k8sManifest {
	t.Helper()
	if _, err := exec.LookPath("yamllint"); err != nil {
		t.Skip("LOUD: sample: no yamllint on PATH (Debian package yamllint); Kubernetes manifest check SKIPPED")
	}
	files, err := filepath.Glob(filepath.Join("deploy", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no deploy/*.yaml: %v", err)
	}
	if out, err := exec.Command("yamllint", append([]string{"-s"}, files...)...).CombinedOutput(); err != nil {
		t.Fatalf("yamllint -s deploy/*.yaml: %v\n%s", err, out)
	}
	const toJSON = "import json, sys, yaml\n" +
		"json.dump([d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None], sys.stdout)"
	byKind := map[string]k8sManifest{}
	for _, f := range files {
		out, err := exec.Command("python3", "-c", toJSON, f).Output()
		if err != nil {
			t.Fatalf("read %s with python3's yaml: %v", f, err)
		}
		var docs []json.RawMessage
		if err := json.Unmarshal(out, &docs); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for i, d := range docs {
			var m k8sManifest
			decodeStrict(t, f+" document "+strconv.Itoa(i+1), d, &m)
			if _, dup := byKind[m.Kind]; dup {
				t.Fatalf("%s: a second %s; the test expects one of each kind", f, m.Kind)
			}
			byKind[m.Kind] = m
		}
	}
	return byKind
}

// TestKubernetesManifests checks deploy/*.yaml: their syntax, that each
// kind has its API version and only fields of the API, and that they
// agree with the sample: the variables it reads, the paths it serves, the
// wake-up port in every place that names it, and a grace period that
// covers its shutdown.
func TestKubernetesManifests(t *testing.T) {
	m := readManifests(t)
	want := map[string]string{
		"Deployment":          "apps/v1",
		"PodDisruptionBudget": "policy/v1",
		"NetworkPolicy":       "networking.k8s.io/v1",
	}
	for kind, api := range want {
		if m[kind].APIVersion != api {
			t.Errorf("%s: apiVersion %q, want %q", kind, m[kind].APIVersion, api)
		}
	}
	for kind := range m {
		if _, ok := want[kind]; !ok {
			t.Errorf("deploy/ has a %s, which this test does not check: add its fields here", kind)
		}
	}
	var dep k8sDeploymentSpec
	decodeStrict(t, "Deployment spec", m["Deployment"].Spec, &dep)
	var pdb k8sPDBSpec
	decodeStrict(t, "PodDisruptionBudget spec", m["PodDisruptionBudget"].Spec, &pdb)
	var np k8sNetworkPolicySpec
	decodeStrict(t, "NetworkPolicy spec", m["NetworkPolicy"].Spec, &np)

	if dep.Replicas != 3 {
		t.Errorf("Deployment replicas %d, want 3", dep.Replicas)
	}
	pod := dep.Template.Metadata.Labels
	for what, sel := range map[string]map[string]string{
		"Deployment selector": dep.Selector.MatchLabels, "PodDisruptionBudget selector": pdb.Selector.MatchLabels,
		"NetworkPolicy podSelector": np.PodSelector.MatchLabels,
	} {
		if len(sel) == 0 {
			t.Errorf("%s is empty", what)
		}
		for k, v := range sel {
			if pod[k] != v {
				t.Errorf("%s %s=%s does not match the pod labels %v", what, k, v, pod)
			}
		}
	}
	if len(dep.Template.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(dep.Template.Spec.Containers))
	}
	c := dep.Template.Spec.Containers[0]

	// Every variable set is one the sample reads; the DSN only from a Secret.
	reads := map[string]bool{"HOSTNAME": true, "CLUSTER_NAME": true}
	for _, ef := range envFlags {
		reads[ef.env] = true
	}
	env := map[string]k8sEnv{}
	for _, e := range c.Env {
		if !reads[e.Name] {
			t.Errorf("env %s: the sample does not read it (it reads %v)", e.Name, slices.Sorted(maps.Keys(reads)))
		}
		env[e.Name] = e
	}
	fieldRef := func(name string) string {
		if e := env[name]; e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			return e.ValueFrom.FieldRef.FieldPath
		}
		return ""
	}
	if got := fieldRef("HOSTNAME"); got != "metadata.name" {
		t.Errorf("HOSTNAME from %q, want the downward API's metadata.name", got)
	}
	if got := fieldRef("CLUSTER_NAME"); got == "" {
		t.Error("CLUSTER_NAME not from the downward API")
	}
	if got := fieldRef("LEASEHOLD_WAKE_ADVERTISE"); got != "status.podIP" {
		t.Errorf("LEASEHOLD_WAKE_ADVERTISE from %q, want the downward API's status.podIP", got)
	}
	if dsn := env["LEASEHOLD_DSN"]; dsn.Value != "" || dsn.ValueFrom == nil || dsn.ValueFrom.SecretKeyRef == nil {
		t.Error("LEASEHOLD_DSN must come from a secretKeyRef, never a value in the manifest")
	}

	// The wake-up port: the address bound, the UDP containerPort and the
	// NetworkPolicy's UDP rule from the sample's own pods.
	_, port, err := net.SplitHostPort(env["LEASEHOLD_WAKE_ADDRESS"].Value)
	if err != nil {
		t.Fatalf("LEASEHOLD_WAKE_ADDRESS %q: %v", env["LEASEHOLD_WAKE_ADDRESS"].Value, err)
	}
	udp := false
	for _, p := range c.Ports {
		if p.Protocol == "UDP" && strconv.Itoa(p.ContainerPort) == port {
			udp = true
		}
	}
	if !udp {
		t.Errorf("no containerPort %s with protocol UDP for LEASEHOLD_WAKE_ADDRESS", port)
	}
	allowed := false
	for _, rule := range np.Ingress {
		for _, from := range rule.From {
			if from.PodSelector == nil || !maps.Equal(from.PodSelector.MatchLabels, np.PodSelector.MatchLabels) {
				continue
			}
			for _, p := range rule.Ports {
				if p.Protocol == "UDP" && string(p.Port) == port {
					allowed = true
				}
			}
		}
	}
	if !allowed {
		t.Errorf("the NetworkPolicy allows no UDP on port %s from the sample's pods", port)
	}

	// The probes: liveness on /healthz (health.Liveness), readiness on
	// /readyz (health.Readiness, up and coordinating), as startHTTP serves
	// them (TestHTTPEndpoints).
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Error("livenessProbe must GET /healthz")
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Error("readinessProbe must GET /readyz")
	}
	if env["SAMPLE_HTTP"].Value == "" {
		t.Error("SAMPLE_HTTP unset: the sample serves no probes")
	}

	// The grace period covers the longest shutdown: the coordinator's
	// drain (work and releases) and its session delete, each at most
	// ShutdownTimeout, the timeline's drain and last write, the HTTP
	// server's and the metrics' shutdown.
	db, err := openGorm(driverSQLitePure, sqliteDSN(driverSQLitePure, filepath.Join(t.TempDir(), "grace.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer closeDB(db, zap.NewNop())
	id, err := identity.New("grace", "test")
	if err != nil {
		t.Fatal(err)
	}
	coord, err := coordination.New(db, id, coordination.Config{})
	if err != nil {
		t.Fatal(err)
	}
	need := 2*coord.Config().ShutdownTimeout + timelineDrain + timelineWriteTimeout + 2*httpShutdown
	if got := time.Duration(dep.Template.Spec.TerminationGracePeriodSeconds) * time.Second; got < need {
		t.Errorf("terminationGracePeriodSeconds %v, want at least %v", got, need)
	}
}
