package helm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The renderings of the chart that `make k8s-manifests` writes and `make k8s-check`
// keeps up to date.
var renderings = []struct{ profile, file string }{
	{"small", "../k8s/small/ferry.yaml"},
	{"production", "../k8s/production/ferry.yaml"},
	{"secrets", "testdata/secrets.yaml"},
}

// errUnknownKind: a rendered object of a kind the tests do not decode.
var errUnknownKind = errors.New("object of a kind the chart tests do not know")

// serviceMonitor is the part of the Prometheus Operator's ServiceMonitor
// (monitoring.coreos.com/v1) the chart renders; its API types are not a dependency, so
// the fields the chart may use are listed here and any other is refused like an unknown
// field of a Kubernetes type.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port      string `json:"port"`
			Path      string `json:"path"`
			Interval  string `json:"interval,omitempty"`
			Scheme    string `json:"scheme,omitempty"`
			TLSConfig *struct {
				InsecureSkipVerify bool `json:"insecureSkipVerify"`
			} `json:"tlsConfig,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// rendering is one rendered file, decoded.
type rendering struct {
	profile, file   string
	configMaps      []*corev1.ConfigMap
	secrets         []*corev1.Secret
	services        []*corev1.Service
	statefulSets    []*appsv1.StatefulSet
	pdbs            []*policyv1.PodDisruptionBudget
	serviceMonitors []*serviceMonitor
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// decodeStrict decodes one YAML document into obj, refusing duplicate keys, unknown
// fields (at any depth) and trailing data.
func decodeStrict(doc []byte, obj any) error {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the object")
	}
	return nil
}

// decodeObject decodes a document by its apiVersion and kind into the typed object
// that is returned; nil for a document without an object (comments only).
func decodeObject(doc []byte) (any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	if tm.APIVersion == "" && tm.Kind == "" {
		var rest map[string]any
		if err := yaml.Unmarshal(doc, &rest); err != nil {
			return nil, err
		}
		if len(rest) > 0 {
			return nil, fmt.Errorf("document without apiVersion and kind: %v", rest)
		}
		return nil, nil
	}
	var obj any
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 ConfigMap":
		obj = &corev1.ConfigMap{}
	case "v1 Secret":
		obj = &corev1.Secret{}
	case "v1 Service":
		obj = &corev1.Service{}
	case "apps/v1 StatefulSet":
		obj = &appsv1.StatefulSet{}
	case "policy/v1 PodDisruptionBudget":
		obj = &policyv1.PodDisruptionBudget{}
	case "monitoring.coreos.com/v1 ServiceMonitor":
		obj = &serviceMonitor{}
	default:
		return nil, fmt.Errorf("%w: %s %s", errUnknownKind, tm.APIVersion, tm.Kind)
	}
	if err := decodeStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s %s: %w", tm.APIVersion, tm.Kind, err)
	}
	return obj, nil
}

// load decodes every object of a rendered file, failing the test on any error.
func load(t *testing.T, profile, file string) *rendering {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%s: %v (run make k8s-manifests)", file, err)
	}
	r := &rendering{profile: profile, file: file}
	names := map[string]bool{}
	for i, doc := range docSeparator.Split(string(raw), -1) {
		obj, err := decodeObject([]byte(doc))
		if err != nil {
			t.Fatalf("%s, document %d: %v", file, i, err)
		}
		if obj == nil {
			continue
		}
		var meta metav1.Object
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			r.configMaps, meta = append(r.configMaps, o), o
		case *corev1.Secret:
			r.secrets, meta = append(r.secrets, o), o
		case *corev1.Service:
			r.services, meta = append(r.services, o), o
		case *appsv1.StatefulSet:
			r.statefulSets, meta = append(r.statefulSets, o), o
		case *policyv1.PodDisruptionBudget:
			r.pdbs, meta = append(r.pdbs, o), o
		case *serviceMonitor:
			r.serviceMonitors, meta = append(r.serviceMonitors, o), o
		}
		if meta.GetName() == "" {
			t.Fatalf("%s, document %d: %T without a name", file, i, obj)
		}
		if meta.GetNamespace() != "" {
			t.Errorf("%s: %T %s sets a namespace; the manifests must apply to any", file, obj, meta.GetName())
		}
		key := fmt.Sprintf("%T/%s", obj, meta.GetName())
		if names[key] {
			t.Errorf("%s: %s rendered twice", file, key)
		}
		names[key] = true
	}
	return r
}

// loadAll decodes the three renderings.
func loadAll(t *testing.T) []*rendering {
	t.Helper()
	rs := make([]*rendering, 0, len(renderings))
	for _, f := range renderings {
		rs = append(rs, load(t, f.profile, f.file))
	}
	return rs
}

// service finds a Service by name.
func (r *rendering) service(name string) *corev1.Service {
	for _, s := range r.services {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// secret finds a Secret by name.
func (r *rendering) secret(name string) *corev1.Secret {
	for _, s := range r.secrets {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// configMap finds a ConfigMap by name.
func (r *rendering) configMap(name string) *corev1.ConfigMap {
	for _, c := range r.configMaps {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// component is the app.kubernetes.io/component label of a StatefulSet's pods.
func component(s *appsv1.StatefulSet) string {
	return s.Spec.Template.Labels["app.kubernetes.io/component"]
}

// byComponent returns the StatefulSets of one component.
func (r *rendering) byComponent(c string) []*appsv1.StatefulSet {
	var out []*appsv1.StatefulSet
	for _, s := range r.statefulSets {
		if component(s) == c {
			out = append(out, s)
		}
	}
	return out
}

// secretValues are the values of every Secret of the rendering: each value whole and
// each of its lines long enough not to occur by chance (a PEM line, an account's
// secretKey line), PEM armour lines aside.
func (r *rendering) secretValues() []string {
	var out []string
	add := func(v string) {
		if strings.TrimSpace(v) == "" {
			return
		}
		out = append(out, v)
		for _, line := range strings.Split(v, "\n") {
			line = strings.TrimSpace(line)
			if len(line) >= 12 && !strings.HasPrefix(line, "-----") {
				out = append(out, line)
			}
			if _, val, ok := strings.Cut(line, "secretKey:"); ok && len(strings.TrimSpace(val)) >= 8 {
				out = append(out, strings.TrimSpace(val))
			}
		}
	}
	for _, s := range r.secrets {
		for _, v := range s.Data {
			add(string(v))
		}
		for _, v := range s.StringData {
			add(v)
		}
	}
	return out
}

func TestRenderingsDecodeStrictly(t *testing.T) {
	for _, r := range loadAll(t) {
		if len(r.statefulSets) < 3 || len(r.pdbs) != len(r.statefulSets) || len(r.configMaps) != 1 {
			t.Errorf("%s: %d StatefulSets, %d PodDisruptionBudgets, %d ConfigMaps; want ≥ 3, one budget each, one ConfigMap",
				r.file, len(r.statefulSets), len(r.pdbs), len(r.configMaps))
		}
		// One headless Service per StatefulSet plus the client Service.
		if len(r.services) != len(r.statefulSets)+1 {
			t.Errorf("%s: %d Services for %d StatefulSets", r.file, len(r.services), len(r.statefulSets))
		}
	}
}

// The strict decoding refuses what a typo in a template would produce, at the top and
// deep inside a pod template, and a kind the tests do not check.
func TestStrictDecodingRefusesUnknownFields(t *testing.T) {
	good := `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: x}
spec:
  serviceName: x
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers:
        - name: c
          image: ferry:local
          readinessProbe: {httpGet: {path: /readyz, port: http}}
`
	if _, err := decodeObject([]byte(good)); err != nil {
		t.Fatalf("valid StatefulSet refused: %v", err)
	}
	for name, doc := range map[string]string{
		"top-level field": strings.Replace(good, "  serviceName: x", "  serviceName: x\n  replica: 3", 1),
		"probe field":     strings.Replace(good, "{path: /readyz, port: http}", "{path: /readyz, port: http, host_name: x}", 1),
		"duplicate key":   strings.Replace(good, "  serviceName: x", "  serviceName: x\n  serviceName: y", 1),
		"wrong type":      strings.Replace(good, "  serviceName: x", "  serviceName: x\n  replicas: three", 1),
	} {
		if _, err := decodeObject([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := decodeObject([]byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n")); !errors.Is(err, errUnknownKind) {
		t.Errorf("Deployment: %v, want errUnknownKind", err)
	}
}
