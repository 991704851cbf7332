package helm

import (
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/ferrymq/ferry/conf"
)

// podIP stands for status.podIP when the tests expand a pod's environment.
const podIP = "10.1.2.3"

// container is the one container of a StatefulSet's pods.
func container(t *testing.T, s *appsv1.StatefulSet) *corev1.Container {
	t.Helper()
	if n := len(s.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("StatefulSet %s: %d containers, want 1", s.Name, n)
	}
	return &s.Spec.Template.Spec.Containers[0]
}

// containerPort is the port of the container's port called name, 0 when none.
func containerPort(c *corev1.Container, name string) int {
	for _, p := range c.Ports {
		if p.Name == name {
			return int(p.ContainerPort)
		}
	}
	return 0
}

// podEnv expands the container's environment as the kubelet would for the first pod
// of s: downward-API fields, Secret keys (from the rendered Secret when there is one),
// and $(VAR) references to variables defined before.
func podEnv(t *testing.T, r *rendering, s *appsv1.StatefulSet, c *corev1.Container) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			v := e.Value
			for k, val := range env {
				v = strings.ReplaceAll(v, "$("+k+")", val)
			}
			if strings.Contains(v, "$(") {
				t.Errorf("%s: env %s=%q refers to an undefined variable", s.Name, e.Name, e.Value)
			}
			env[e.Name] = v
		case e.ValueFrom.FieldRef != nil:
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				env[e.Name] = s.Name + "-0"
			case "status.podIP":
				env[e.Name] = podIP
			default:
				t.Errorf("%s: env %s from unexpected field %s", s.Name, e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			env[e.Name] = "value-of-" + ref.Key
			if sec := r.secret(ref.Name); sec != nil {
				v, ok := sec.StringData[ref.Key]
				if !ok {
					t.Errorf("%s: env %s from key %s that Secret %s lacks", s.Name, e.Name, ref.Key, ref.Name)
				}
				env[e.Name] = v
			}
		default:
			t.Errorf("%s: env %s from an unexpected source", s.Name, e.Name)
		}
	}
	return env
}

// mountedFile finds the volume that the container sees file in and the key it
// projects there: for a ConfigMap or Secret volume with items, the item's key.
func mountedFile(t *testing.T, s *appsv1.StatefulSet, c *corev1.Container, file string) (vol *corev1.Volume, key string) {
	t.Helper()
	dir, base := path.Split(file)
	for _, m := range c.VolumeMounts {
		if path.Clean(m.MountPath) != path.Clean(dir) {
			continue
		}
		for i := range s.Spec.Template.Spec.Volumes {
			v := &s.Spec.Template.Spec.Volumes[i]
			if v.Name != m.Name {
				continue
			}
			var items []corev1.KeyToPath
			switch {
			case v.ConfigMap != nil:
				items = v.ConfigMap.Items
			case v.Secret != nil:
				items = v.Secret.Items
			default:
				t.Fatalf("%s: %s is on volume %s, neither a ConfigMap nor a Secret", s.Name, file, v.Name)
			}
			for _, it := range items {
				if it.Path == base {
					return v, it.Key
				}
			}
			t.Fatalf("%s: volume %s mounted at %s has no item %s", s.Name, v.Name, m.MountPath, base)
		}
	}
	t.Fatalf("%s: nothing is mounted where %s is", s.Name, file)
	return nil, ""
}

// podConfig is a pod's configuration as Ferry loads it.
type podConfig struct {
	server string // namesrv, controller or broker: the command
	raw    string // the file from the ConfigMap
	cfg    *conf.Config
	env    map[string]string
}

// loadPodConfig loads the configuration the first pod of s runs with: the file its
// --config names (from the ConfigMap mounted there), its environment, and Ferry's loader
// (package conf: an unknown key, a bad value or a missing one is an error).
func loadPodConfig(t *testing.T, r *rendering, s *appsv1.StatefulSet) podConfig {
	t.Helper()
	c := container(t, s)
	if len(c.Command) != 0 || len(c.Args) != 3 || c.Args[1] != "--config" {
		t.Fatalf("%s: command %q args %q, want the image's entrypoint with [SERVER --config FILE]", s.Name, c.Command, c.Args)
	}
	server, file := c.Args[0], c.Args[2]
	vol, key := mountedFile(t, s, c, file)
	if vol.ConfigMap == nil {
		t.Fatalf("%s: config %s is not from a ConfigMap", s.Name, file)
	}
	cm := r.configMap(vol.ConfigMap.Name)
	if cm == nil {
		t.Fatalf("%s: ConfigMap %s is not rendered", s.Name, vol.ConfigMap.Name)
	}
	raw, ok := cm.Data[key]
	if !ok {
		t.Fatalf("%s: ConfigMap %s has no %s", s.Name, cm.Name, key)
	}
	tmp := filepath.Join(t.TempDir(), key)
	if err := os.WriteFile(tmp, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	env := podEnv(t, r, s, c)
	cfg, err := conf.Load(conf.LoadOptions{
		ConfigFile: tmp,
		LookupEnv:  func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Server:     server,
	})
	if err != nil {
		t.Fatalf("%s (%s): %s does not load: %v", r.profile, s.Name, key, err)
	}
	return podConfig{server: server, raw: raw, cfg: cfg, env: env}
}

// checkBindAll: addr listens on every interface at the container's port called name.
func checkBindAll(t *testing.T, who, key, addr string, c *corev1.Container, portName string) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "0.0.0.0" {
		t.Errorf("%s: %s = %q, want 0.0.0.0:PORT (a pod is reached at its own IP)", who, key, addr)
		return
	}
	if p, _ := strconv.Atoi(port); p == 0 || p != containerPort(c, portName) {
		t.Errorf("%s: %s port %s is not the container port %q (%d)", who, key, port, portName, containerPort(c, portName))
	}
}

// tlsMode is the TLS mode of the process's own section.
func (p podConfig) tlsMode() string {
	switch p.server {
	case conf.ServerNamesrv:
		return p.cfg.NameServer.TLSMode
	case conf.ServerController:
		return p.cfg.Controller.TLSMode
	}
	return p.cfg.Broker.TLSMode
}

// httpListen is the process's own httpListen.
func (p podConfig) httpListen() string {
	switch p.server {
	case conf.ServerNamesrv:
		return p.cfg.NameServer.HTTPListen
	case conf.ServerController:
		return p.cfg.Controller.HTTPListen
	}
	return p.cfg.Broker.HTTPListen
}

// Every StatefulSet probes the documented paths (operations.md, Health and readiness)
// on the port its process serves them on, in the scheme its TLS mode needs.
func TestProbesOnDocumentedPaths(t *testing.T) {
	for _, r := range loadAll(t) {
		for _, s := range r.statefulSets {
			c := container(t, s)
			pc := loadPodConfig(t, r, s)
			checkBindAll(t, s.Name, pc.server+".httpListen", pc.httpListen(), c, "http")
			scheme := corev1.URISchemeHTTP
			if pc.tlsMode() == "enforcing" {
				scheme = corev1.URISchemeHTTPS
			}
			for _, pr := range []struct {
				kind  string
				probe *corev1.Probe
				path  string
			}{{"readiness", c.ReadinessProbe, "/readyz"}, {"liveness", c.LivenessProbe, "/healthz"}, {"startup", c.StartupProbe, "/healthz"}} {
				switch {
				case pr.probe == nil || pr.probe.HTTPGet == nil:
					t.Errorf("%s %s: no HTTP %s probe", r.profile, s.Name, pr.kind)
				case pr.probe.HTTPGet.Path != pr.path:
					t.Errorf("%s %s: %s probe on %q, want %q", r.profile, s.Name, pr.kind, pr.probe.HTTPGet.Path, pr.path)
				case pr.probe.HTTPGet.Port != intstr.FromString("http"):
					t.Errorf("%s %s: %s probe on port %v, want the http port", r.profile, s.Name, pr.kind, pr.probe.HTTPGet.Port)
				case pr.probe.HTTPGet.Scheme != scheme:
					t.Errorf("%s %s: %s probe scheme %s with tlsMode %s, want %s", r.profile, s.Name, pr.kind, pr.probe.HTTPGet.Scheme, pc.tlsMode(), scheme)
				}
			}
			if pc.tlsMode() == "enforcing" && strings.Contains(pc.raw, "tlsRequireClientCert: true") {
				t.Errorf("%s %s: enforcing TLS with client certificates required: the kubelet's probes present none", r.profile, s.Name)
			}
		}
	}
}

// allowedUnavailable is how many of replicas pods the budget lets a disruption take.
func allowedUnavailable(t *testing.T, pdb *policyv1.PodDisruptionBudget, replicas int) int {
	t.Helper()
	switch {
	case pdb.Spec.MaxUnavailable != nil && pdb.Spec.MinAvailable == nil:
		n, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, replicas, true)
		if err != nil {
			t.Fatalf("%s: %v", pdb.Name, err)
		}
		return n
	case pdb.Spec.MinAvailable != nil && pdb.Spec.MaxUnavailable == nil:
		n, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, replicas, true)
		if err != nil {
			t.Fatalf("%s: %v", pdb.Name, err)
		}
		return replicas - n
	}
	t.Fatalf("%s: sets both or neither of minAvailable and maxUnavailable", pdb.Name)
	return 0
}

// Each StatefulSet has exactly one budget, covering its pods only: a broker group's and
// the name servers' let one member go at a time, the controllers' keep a majority.
func TestDisruptionBudgets(t *testing.T) {
	for _, r := range loadAll(t) {
		for _, s := range r.statefulSets {
			podLabels := labels.Set(s.Spec.Template.Labels)
			var budgets []*policyv1.PodDisruptionBudget
			for _, pdb := range r.pdbs {
				sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
				if err != nil {
					t.Fatalf("%s: %v", pdb.Name, err)
				}
				if sel.Empty() {
					t.Errorf("%s: budget %s selects every pod", r.profile, pdb.Name)
					continue
				}
				if sel.Matches(podLabels) {
					budgets = append(budgets, pdb)
					for _, other := range r.statefulSets {
						if other != s && sel.Matches(labels.Set(other.Spec.Template.Labels)) {
							t.Errorf("%s: budget %s covers the pods of %s and of %s", r.profile, pdb.Name, s.Name, other.Name)
						}
					}
				}
			}
			if len(budgets) != 1 {
				t.Errorf("%s: %s has %d disruption budgets, want 1", r.profile, s.Name, len(budgets))
				continue
			}
			replicas := int(*s.Spec.Replicas)
			n := allowedUnavailable(t, budgets[0], replicas)
			switch component(s) {
			case "controller":
				if n < 1 || replicas-n < replicas/2+1 {
					t.Errorf("%s: %d controllers, %d may be down: a majority must stay up and a drain must be possible", r.profile, replicas, n)
				}
			case "broker", "namesrv":
				if n != 1 {
					t.Errorf("%s: %s (%d replicas) lets %d members be down at once, want exactly 1", r.profile, s.Name, replicas, n)
				}
			default:
				t.Errorf("%s: %s of unknown component %q", r.profile, s.Name, component(s))
			}
		}
	}
}

// There is one controller StatefulSet with an odd number ≥ 3 of pods, and every node's
// configuration names all of them as peers, by their stable DNS names, with its pod
// name as node id.
func TestControllersOddAndPeers(t *testing.T) {
	for _, r := range loadAll(t) {
		cs := r.byComponent("controller")
		if len(cs) != 1 {
			t.Fatalf("%s: %d controller StatefulSets, want 1", r.profile, len(cs))
		}
		s := cs[0]
		n := int(*s.Spec.Replicas)
		if n < 3 || n%2 == 0 {
			t.Errorf("%s: %d controllers, want an odd number ≥ 3", r.profile, n)
		}
		if s.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
			t.Errorf("%s: controllers start %s; they must start together (none is ready before a majority runs)", r.profile, s.Spec.PodManagementPolicy)
		}
		c := container(t, s)
		pc := loadPodConfig(t, r, s)
		cc := pc.cfg.Controller
		if cc.NodeID != s.Name+"-0" {
			t.Errorf("%s: controller nodeId %q, want the pod name", r.profile, cc.NodeID)
		}
		var want []string
		for i := range n {
			want = append(want, fmt.Sprintf("%s-%d@%s-%d.%s:%d", s.Name, i, s.Name, i, s.Spec.ServiceName, containerPort(c, "raft")))
		}
		if !slices.Equal(cc.Peers, want) {
			t.Errorf("%s: controller peers %q, want %q", r.profile, cc.Peers, want)
		}
		checkBindAll(t, s.Name, "controller.listen", cc.Listen, c, "remoting")
		checkBindAll(t, s.Name, "controller.raftListen", cc.RaftListen, c, "raft")
		checkHeadless(t, r, s)
	}
}

// checkHeadless: the StatefulSet's Service is headless, selects its pods and publishes
// them before they are ready.
func checkHeadless(t *testing.T, r *rendering, s *appsv1.StatefulSet) {
	t.Helper()
	svc := r.service(s.Spec.ServiceName)
	switch {
	case svc == nil:
		t.Errorf("%s: %s's Service %s is not rendered", r.profile, s.Name, s.Spec.ServiceName)
	case svc.Spec.ClusterIP != corev1.ClusterIPNone:
		t.Errorf("%s: Service %s is not headless", r.profile, svc.Name)
	case !svc.Spec.PublishNotReadyAddresses:
		t.Errorf("%s: Service %s does not publish unready pods (controllers must find each other to become ready)", r.profile, svc.Name)
	case !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(s.Spec.Template.Labels)):
		t.Errorf("%s: Service %s does not select %s's pods", r.profile, svc.Name, s.Name)
	}
}

// Brokers run in controller mode, reach every controller and name server by its stable
// name, advertise their pod IP, bind every interface, keep their store on their own
// volume, and the members of a group are spread over nodes.
func TestBrokerGroups(t *testing.T) {
	for _, r := range loadAll(t) {
		ctrl := r.byComponent("controller")[0]
		var ctrlAddrs []string
		for i := range int(*ctrl.Spec.Replicas) {
			ctrlAddrs = append(ctrlAddrs, fmt.Sprintf("%s-%d.%s:%d", ctrl.Name, i, ctrl.Spec.ServiceName, containerPort(container(t, ctrl), "remoting")))
		}
		ns := r.byComponent("namesrv")
		if len(ns) != 1 {
			t.Fatalf("%s: %d name server StatefulSets, want 1", r.profile, len(ns))
		}
		var nsAddrs []string
		for i := range int(*ns[0].Spec.Replicas) {
			nsAddrs = append(nsAddrs, fmt.Sprintf("%s-%d.%s:%d", ns[0].Name, i, ns[0].Spec.ServiceName, containerPort(container(t, ns[0]), "remoting")))
		}
		groups := r.byComponent("broker")
		if len(groups) == 0 {
			t.Fatalf("%s: no broker group", r.profile)
		}
		names := map[string]bool{}
		for _, s := range groups {
			c := container(t, s)
			pc := loadPodConfig(t, r, s)
			b := pc.cfg.Broker
			group := s.Spec.Template.Labels["ferry-group"]
			if b.BrokerName != group || names[group] {
				t.Errorf("%s: %s runs brokerName %q as group %q (groups must be distinct)", r.profile, s.Name, b.BrokerName, group)
			}
			names[group] = true
			if !b.ControllerMode || !slices.Equal(b.ControllerAddrs, ctrlAddrs) {
				t.Errorf("%s: %s: controllerMode %v, controllerAddrs %q, want true and %q", r.profile, s.Name, b.ControllerMode, b.ControllerAddrs, ctrlAddrs)
			}
			if !slices.Equal(b.NamesrvAddrs, nsAddrs) {
				t.Errorf("%s: %s: namesrvAddrs %q, want %q", r.profile, s.Name, b.NamesrvAddrs, nsAddrs)
			}
			if want := net.JoinHostPort(podIP, strconv.Itoa(containerPort(c, "remoting"))); b.AdvertisedAddr != want {
				t.Errorf("%s: %s advertises %q, want the pod IP %q", r.profile, s.Name, b.AdvertisedAddr, want)
			}
			if strings.Contains(pc.raw, "advertisedAddr") {
				t.Errorf("%s: %s's shared config file sets advertisedAddr; it is per pod", r.profile, s.Name)
			}
			checkBindAll(t, s.Name, "broker.listen", b.Listen, c, "remoting")
			checkBindAll(t, s.Name, "broker.haListen", b.HAListen, c, "ha")
			if *s.Spec.Replicas < 2 {
				t.Errorf("%s: %s has %d brokers, want a master and at least one replica", r.profile, s.Name, *s.Spec.Replicas)
			}
			if s.Spec.PodManagementPolicy != appsv1.ParallelPodManagement || s.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
				t.Errorf("%s: %s: %s start and %s updates, want Parallel and OnDelete (replicas are upgraded before the master, by hand)",
					r.profile, s.Name, s.Spec.PodManagementPolicy, s.Spec.UpdateStrategy.Type)
			}
			checkHeadless(t, r, s)
			checkAntiAffinity(t, r, s)
		}
		for _, s := range r.statefulSets {
			checkDataVolume(t, r, s, loadPodConfig(t, r, s))
		}
	}
}

// checkAntiAffinity: the pods of s keep off each other's nodes (required in the
// production profile, preferred in the others).
func checkAntiAffinity(t *testing.T, r *rendering, s *appsv1.StatefulSet) {
	t.Helper()
	aff := s.Spec.Template.Spec.Affinity
	if aff == nil || aff.PodAntiAffinity == nil {
		t.Errorf("%s: %s has no pod anti-affinity", r.profile, s.Name)
		return
	}
	terms := aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if r.profile != "production" {
		for _, w := range aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	for _, term := range terms {
		sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		if err != nil {
			t.Fatal(err)
		}
		if term.TopologyKey == "kubernetes.io/hostname" && !sel.Empty() && sel.Matches(labels.Set(s.Spec.Template.Labels)) {
			return
		}
	}
	t.Errorf("%s: %s's pods are not kept on different nodes", r.profile, s.Name)
}

// checkDataVolume: the process's data is on the pod's own volume.
func checkDataVolume(t *testing.T, r *rendering, s *appsv1.StatefulSet, pc podConfig) {
	t.Helper()
	dir := map[string]string{
		conf.ServerNamesrv:    path.Dir(pc.cfg.NameServer.KVConfigPath),
		conf.ServerController: pc.cfg.Controller.DataDir,
		"broker":              pc.cfg.Broker.DataDir,
	}[pc.server]
	if len(s.Spec.VolumeClaimTemplates) != 1 {
		t.Errorf("%s: %s has %d volume claim templates, want 1", r.profile, s.Name, len(s.Spec.VolumeClaimTemplates))
		return
	}
	claim := s.Spec.VolumeClaimTemplates[0].Name
	for _, m := range container(t, s).VolumeMounts {
		if m.Name == claim && path.Clean(m.MountPath) == path.Clean(dir) && !m.ReadOnly {
			return
		}
	}
	t.Errorf("%s: %s keeps its data in %q, which is not its volume %s", r.profile, s.Name, dir, claim)
}

// No Secret value is written into a ConfigMap, an annotation or a literal environment
// variable; the credentials and files the configuration names come from Secrets.
func TestNoSecretValueInConfigMaps(t *testing.T) {
	checked := 0
	for _, r := range loadAll(t) {
		values := r.secretValues()
		if r.profile == "secrets" && (len(r.secrets) < 2 || len(values) < 6) {
			t.Fatalf("secrets: %d Secrets with %d values; the test values must make the ACL and TLS Secrets", len(r.secrets), len(values))
		}
		for _, v := range values {
			checked++
			for _, cm := range r.configMaps {
				for k, data := range cm.Data {
					if strings.Contains(data, v) {
						t.Errorf("%s: ConfigMap %s, %s holds a Secret value %q", r.profile, cm.Name, k, v)
					}
				}
			}
			for _, s := range r.statefulSets {
				for k, a := range s.Spec.Template.Annotations {
					if strings.Contains(a, v) {
						t.Errorf("%s: %s annotation %s holds a Secret value", r.profile, s.Name, k)
					}
				}
				for _, e := range container(t, s).Env {
					if e.Value != "" && strings.Contains(e.Value, v) {
						t.Errorf("%s: %s env %s holds a Secret value", r.profile, s.Name, e.Name)
					}
				}
			}
		}
		for _, s := range r.statefulSets {
			c := container(t, s)
			for _, e := range c.Env {
				if strings.Contains(e.Name, "SECRET") || strings.Contains(e.Name, "ACCESS_KEY") {
					if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
						t.Errorf("%s: %s env %s is not from a Secret", r.profile, s.Name, e.Name)
					}
				}
			}
			pc := loadPodConfig(t, r, s)
			for _, f := range pc.secretFiles() {
				if vol, _ := mountedFile(t, s, c, f); vol.Secret == nil {
					t.Errorf("%s: %s reads %s from volume %s, not from a Secret", r.profile, s.Name, f, vol.Name)
				}
			}
			if pc.server == "broker" && pc.cfg.Broker.ACLEnable && (pc.cfg.Broker.AccessKey == "" || pc.cfg.Broker.SecretKey == "") {
				t.Errorf("%s: %s has ACL on but no account to sign its registrations with", r.profile, s.Name)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no Secret value checked")
	}
}

// secretFiles are the ACL and TLS files the process's configuration names.
func (p podConfig) secretFiles() []string {
	var files []string
	add := func(fs ...string) {
		for _, f := range fs {
			if f != "" {
				files = append(files, f)
			}
		}
	}
	switch n, c, b := p.cfg.NameServer, p.cfg.Controller, p.cfg.Broker; p.server {
	case conf.ServerNamesrv:
		if n.ACLEnable {
			add(n.ACLFile)
		}
		if n.TLSMode != "disabled" {
			add(n.TLSCertFile, n.TLSKeyFile, n.TLSClientCAFile)
		}
	case conf.ServerController:
		if c.ACLEnable {
			add(c.ACLFile)
		}
		if c.TLSMode != "disabled" {
			add(c.TLSCertFile, c.TLSKeyFile, c.TLSClientCAFile)
		}
	default:
		if b.ACLEnable {
			add(b.ACLFile)
		}
		if b.TLSMode != "disabled" {
			add(b.TLSCertFile, b.TLSKeyFile, b.TLSClientCAFile)
		}
	}
	return files
}

// Metrics are scraped: by pod annotations naming the http port, or by a ServiceMonitor
// whose port every component's headless Service has.
func TestMetricsScraped(t *testing.T) {
	for _, r := range loadAll(t) {
		for _, s := range r.statefulSets {
			a := s.Spec.Template.Annotations
			annotated := a["prometheus.io/scrape"] == "true" &&
				a["prometheus.io/port"] == strconv.Itoa(containerPort(container(t, s), "http")) &&
				a["prometheus.io/path"] == "/metrics"
			monitored := false
			for _, sm := range r.serviceMonitors {
				sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
				if err != nil {
					t.Fatal(err)
				}
				svc := r.service(s.Spec.ServiceName)
				if svc == nil || !sel.Matches(labels.Set(svc.Labels)) {
					continue
				}
				for _, ep := range sm.Spec.Endpoints {
					for _, p := range svc.Spec.Ports {
						if ep.Port == p.Name && ep.Path == "/metrics" && p.TargetPort == intstr.FromString("http") {
							monitored = true
						}
					}
				}
			}
			if !annotated && !monitored {
				t.Errorf("%s: %s's metrics are neither annotated for scraping nor in a ServiceMonitor", r.profile, s.Name)
			}
		}
	}
}

// composeImage is the image of the compose deployments (x-ferry: image), which
// deploy/Dockerfile builds.
func composeImage(t *testing.T, file string) string {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		XFerry struct {
			Image string `json:"image"`
		} `json:"x-ferry"`
	}
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if c.XFerry.Image == "" {
		t.Fatalf("%s: no x-ferry image", file)
	}
	return c.XFerry.Image
}

// The chart runs the image the compose deployments run (make deploy-test,
// make deploy-controller-test), with the same commands.
func TestSameImageAsCompose(t *testing.T) {
	image := composeImage(t, "../docker-compose.controller.yml")
	if fixed := composeImage(t, "../docker-compose.yml"); fixed != image {
		t.Fatalf("the compose files disagree on the image: %q and %q", image, fixed)
	}
	for _, r := range loadAll(t) {
		for _, s := range r.statefulSets {
			c := container(t, s)
			if c.Image != image {
				t.Errorf("%s: %s runs %q, the compose deployments %q", r.profile, s.Name, c.Image, image)
			}
			if want := map[string]string{"namesrv": "namesrv", "controller": "controller", "broker": "broker"}[component(s)]; c.Args[0] != want {
				t.Errorf("%s: %s runs `ferry %s`, want `ferry %s`", r.profile, s.Name, c.Args[0], want)
			}
		}
	}
}

// flatten turns a YAML configuration into key → value (section.key).
func flatten(t *testing.T, raw []byte) map[string]string {
	t.Helper()
	var m map[string]map[string]any
	if err := yaml.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for section, keys := range m {
		for k, v := range keys {
			out[section+"."+k] = fmt.Sprint(v)
		}
	}
	return out
}

// The small profile's broker group and controllers run the settings of the compose
// controller-mode deployment (deploy/conf/controller-mode/), except the addresses,
// which belong to each deployment's network.
func TestSmallProfileMatchesComposeControllerMode(t *testing.T) {
	perDeployment := map[string]string{
		"broker.advertisedAddr":  "the pod IP, from the environment",
		"broker.haListen":        "compose binds its internal network's address, a pod every interface",
		"broker.namesrvAddrs":    "addresses",
		"broker.controllerAddrs": "addresses",
		"controller.nodeId":      "the pod name, from the environment",
		"controller.raftListen":  "compose binds its internal network's address, a pod every interface",
		"controller.peers":       "addresses",
	}
	r := load(t, "small", "../k8s/small/ferry.yaml")
	files := map[string]string{"broker": "broker-a-1.yaml", "controller": "controller-1.yaml", "namesrv": "namesrv.yaml"}
	for comp, file := range files {
		compose, err := os.ReadFile(filepath.Join("..", "conf", "controller-mode", file))
		if err != nil {
			t.Fatal(err)
		}
		sets := r.byComponent(comp)
		if len(sets) == 0 {
			t.Fatalf("small: no %s StatefulSet", comp)
		}
		chart := flatten(t, []byte(loadPodConfig(t, r, sets[0]).raw))
		for k, v := range flatten(t, compose) {
			if _, skip := perDeployment[k]; skip {
				continue
			}
			if chart[k] != v {
				t.Errorf("%s: %s = %q in compose's %s, %q in the chart's", comp, k, v, file, chart[k])
			}
		}
	}
}
