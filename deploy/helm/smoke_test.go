//go:build linux && k8ssmoke

package helm

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/ferrymq/ferry/controller"
	"github.com/ferrymq/ferry/internal/testkit"
)

// The small profile's pods in Docker (`make k8s-smoke`, build tag k8ssmoke; needs
// Docker and the image of `make deploy-build`, ferry:local). Each pod of the rendered
// StatefulSets (deploy/k8s/small/ferry.yaml) becomes a container run as the manifest says:
// the container named as the pod, reachable by its pod DNS name (<pod>.<service>, a
// network alias), the config file of its ConfigMap, its environment (status.podIP a fixed
// address, metadata.name the pod name), its user and read-only root file system, and
// /data a directory of its own that outlives the container, as a volume outlives a pod.
// What Kubernetes adds (scheduling, Services, probes) is not run; the probes' paths are
// asked from the host.

const (
	smokeNet    = "ferry-k8ssmoke"
	smokeSubnet = "172.28.9" // /24
	smokeImage  = "ferry:local"
)

// smokePod is one pod of the rendering, run as a container.
type smokePod struct {
	name, alias, ip string
	set             *appsv1.StatefulSet
	dataDir         string // the host directory mounted on /data
}

// smokeDocker runs docker, failing t with its output when it fails.
func smokeDocker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// start runs the pod's container at ip.
func (p *smokePod) start(t *testing.T, r *rendering, confDir string, ip string) {
	t.Helper()
	p.ip = ip
	c := container(t, p.set)
	env := podEnv(t, r, p.set, c)
	for k, v := range env {
		env[k] = strings.ReplaceAll(strings.ReplaceAll(v, podIP, ip), p.set.Name+"-0", p.name)
	}
	args := []string{"run", "-d", "--name", p.name, "--hostname", p.name,
		"--network", smokeNet, "--network-alias", p.alias, "--ip", ip,
		"-v", p.dataDir + ":/data", "-v", confDir + ":/etc/ferry/config:ro"}
	if sc := p.set.Spec.Template.Spec.SecurityContext; sc != nil && sc.RunAsUser != nil && os.Getuid() == 0 {
		args = append(args, "--user", fmt.Sprintf("%d:%d", *sc.RunAsUser, *sc.RunAsGroup))
	} else {
		args = append(args, "--user", fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()))
	}
	if c.SecurityContext != nil && c.SecurityContext.ReadOnlyRootFilesystem != nil && *c.SecurityContext.ReadOnlyRootFilesystem {
		args = append(args, "--read-only")
	}
	for k, v := range env {
		args = append(args, "-e", k+"="+v)
	}
	args = append(args, c.Image)
	smokeDocker(t, append(args, c.Args...)...)
}

// stop stops the container as the kubelet deletes a pod (SIGTERM, then the grace period)
// and removes it; its data directory stays.
func (p *smokePod) stop(t *testing.T) {
	t.Helper()
	grace := int64(30)
	if g := p.set.Spec.Template.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	smokeDocker(t, "stop", "-t", strconv.FormatInt(grace, 10), p.name)
	smokeDocker(t, "rm", p.name)
}

// ready is whether the pod's readiness probe path answers 200.
func (p *smokePod) ready() bool {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + net.JoinHostPort(p.ip, "9880") + "/readyz")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

func TestSmallProfileInDocker(t *testing.T) {
	if _, err := exec.Command("docker", "image", "inspect", smokeImage).CombinedOutput(); err != nil {
		t.Fatalf("image %s: build it (make deploy-build, then docker build -t %s deploy/; make k8s-smoke does)", smokeImage, smokeImage)
	}
	r := load(t, "small", "../k8s/small/ferry.yaml")
	confDir := t.TempDir()
	for k, v := range r.configMap("ferry-config").Data {
		if err := os.WriteFile(filepath.Join(confDir, k), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	dataRoot, err := os.MkdirTemp("", "ferry-k8ssmoke-")
	if err != nil {
		t.Fatal(err)
	}

	var pods []*smokePod
	byName := map[string]*smokePod{}
	for _, s := range r.statefulSets {
		for i := range int(*s.Spec.Replicas) {
			name := fmt.Sprintf("%s-%d", s.Name, i)
			dir := filepath.Join(dataRoot, name)
			if err := os.MkdirAll(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			_ = os.Chmod(dir, 0o777) // any user the manifest names writes it
			p := &smokePod{name: name, alias: name + "." + s.Spec.ServiceName, set: s, dataDir: dir}
			pods = append(pods, p)
			byName[name] = p
		}
	}
	cleanup := func() {
		for _, p := range pods {
			_, _ = exec.Command("docker", "rm", "-f", p.name).CombinedOutput()
		}
		_, _ = exec.Command("docker", "network", "rm", smokeNet).CombinedOutput()
	}
	cleanup()
	smokeDocker(t, "network", "create", "--subnet", smokeSubnet+".0/24", smokeNet)
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range pods {
				out, _ := exec.Command("docker", "logs", "--tail", "15", p.name).CombinedOutput()
				t.Logf("--- %s\n%s", p.name, out)
			}
		}
		if os.Getenv("FERRY_DEPLOY_KEEP") != "1" {
			cleanup()
			_ = os.RemoveAll(dataRoot)
		}
	})
	for i, p := range pods {
		p.start(t, r, confDir, fmt.Sprintf("%s.%d", smokeSubnet, 10+i))
	}

	// Every pod turns ready: the controllers elected a leader by their DNS names, the
	// brokers registered with the name servers by theirs.
	testkit.EventuallyEvery(t, 90*time.Second, 500*time.Millisecond, func() bool {
		for _, p := range pods {
			if !p.ready() {
				return false
			}
		}
		return true
	}, "every pod's /readyz")

	var ctlAddrs []string
	for _, p := range pods {
		if component(p.set) == "controller" {
			ctlAddrs = append(ctlAddrs, net.JoinHostPort(p.ip, "9878"))
		}
	}
	co := controller.DefaultClientOptions()
	co.Addrs = ctlAddrs
	ctl, err := controller.NewClient(co)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ctl.Close() })
	group := func() controller.GroupView {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		v, _ := ctl.Group(ctx, "broker-a")
		return v
	}
	settled := func() bool {
		v := group()
		return v.Master > 0 && len(v.SyncStateSet) == 3 && len(v.Members) == 3
	}
	testkit.EventuallyEvery(t, 60*time.Second, 500*time.Millisecond, settled, "broker-a: a master and three brokers in the SyncStateSet")
	podOf := func(addr string) *smokePod {
		host, _, _ := net.SplitHostPort(addr)
		for _, p := range pods {
			if p.ip == host {
				return p
			}
		}
		t.Fatalf("no pod at %s", addr)
		return nil
	}

	nsrv := byName["ferry-namesrv-0"]
	ferryctl := func(args ...string) (string, error) {
		out, err := exec.Command("docker", append([]string{"exec", nsrv.name, "/ferryctl", "-n",
			"ferry-namesrv-0.ferry-namesrv:9876;ferry-namesrv-1.ferry-namesrv:9876"}, args...)...).CombinedOutput()
		return string(out), err
	}
	mustCtl := func(args ...string) string {
		t.Helper()
		out, err := ferryctl(args...)
		if err != nil {
			t.Fatalf("ferryctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	created := time.Now()
	mustCtl("topic", "create", "-t", "SmokeTopic", "-c", "FerryCluster", "-r", "4", "-w", "4")
	// Slaves copy topics from their master every slaveSyncInterval (10 s): wait until each
	// has, so that whichever is elected serves the topic.
	slaves := map[string]bool{}
	for _, m := range group().Members {
		testkit.EventuallyEvery(t, 30*time.Second, 500*time.Millisecond, func() bool {
			out, err := ferryctl("broker", "status", "-b", m.Addr, "-o", "json")
			if err != nil {
				return false
			}
			if strings.Contains(out, `"brokerRole": "SLAVE"`) || strings.Contains(out, `"brokerRole":"SLAVE"`) {
				slaves[m.Addr] = true
				i := strings.Index(out, "ferrySlaveSyncTime")
				if i < 0 {
					return false
				}
				digits := strings.TrimLeft(out[i+len("ferrySlaveSyncTime"):], `": `)
				end := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' })
				ms, err := strconv.ParseInt(digits[:max(end, 0)], 10, 64)
				return err == nil && ms > created.UnixMilli()
			}
			return true
		}, m.Addr+" synced the topic")
	}
	if len(slaves) != 2 {
		t.Fatalf("%d slaves seen in broker status, want 2", len(slaves))
	}
	mustCtl("send", "-t", "SmokeTopic", "--count", "100", "before")

	// A replica's pod is recreated at another address with its volume: it keeps its id,
	// the controllers take its new address, and once the name servers let its name move
	// (namesrv.brokerExpiry) it is ready and routed again.
	before := group()
	var replica *smokePod
	var replicaID int64
	for _, m := range before.Members {
		if m.ID != before.Master {
			replica, replicaID = podOf(m.Addr), m.ID
			break
		}
	}
	replica.stop(t)
	replica.start(t, r, confDir, smokeSubnet+".40")
	testkit.EventuallyEvery(t, 120*time.Second, time.Second, func() bool {
		m, ok := group().Member(replicaID)
		return replica.ready() && ok && strings.HasPrefix(m.Addr, replica.ip+":") && settled()
	}, "the recreated replica ready, at its new address and back in the SyncStateSet")
	if out := mustCtl("cluster", "list"); !strings.Contains(out, replica.ip+":10911") {
		t.Fatalf("the name servers do not route the replica's new address:\n%s", out)
	}

	// The master's pod is deleted: it hands over to a replica; recreated at another
	// address it rejoins as a replica.
	master := podOf(func() string { m, _ := before.Member(before.Master); return m.Addr }())
	master.stop(t)
	testkit.EventuallyEvery(t, 30*time.Second, 500*time.Millisecond, func() bool {
		v := group()
		return v.Master > 0 && v.Master != before.Master && v.MasterEpoch > before.MasterEpoch
	}, "another master elected")
	mustCtl("send", "-t", "SmokeTopic", "--count", "50", "during")
	master.start(t, r, confDir, smokeSubnet+".41")
	testkit.EventuallyEvery(t, 120*time.Second, time.Second, func() bool {
		return master.ready() && settled()
	}, "the old master ready again and in the SyncStateSet")
	if v := group(); v.Master == before.Master || !slices.ContainsFunc(v.Members, func(m controller.MemberView) bool {
		return strings.HasPrefix(m.Addr, master.ip+":")
	}) {
		t.Fatalf("after the old master came back: %+v", v)
	}
	out := mustCtl("consume", "-t", "SmokeTopic", "-g", "smoke", "--from", "first", "--count", "150", "--timeout", "60s", "-o", "json")
	if n := strings.Count(strings.TrimSpace(out), "\n") + 1; n != 150 {
		t.Fatalf("consumed %d of 150 messages:\n%s", n, out)
	}
}
