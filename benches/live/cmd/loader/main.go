// loader fills an empty cluster with Nodes and Pods that look like a real cluster's, through the
// API, for the live benchmark (benches/live/run). The layout is deterministic from --seed.
//
// What it creates, nothing of which a controller has to finish (the benchmark runs without
// kube-controller-manager, kube-scheduler or a kubelet, so nothing changes once it is loaded):
//
//   - Nodes of three sizes in three zones, Ready, with capacity, allocatable, addresses and
//     nodeInfo as a kubelet reports them; a few cordoned and a few NotReady;
//   - namespaces team-NNN, each with its default ServiceAccount, and two PriorityClasses;
//   - a DaemonSet (kube-system/kube-proxy) with a pod on every node;
//   - Deployments, each with one ReplicaSet (ownerReference to the Deployment) and its pods
//     (ownerReference to the ReplicaSet, controller: true), with status written through the
//     status subresource as the controllers would;
//   - a few bare pods (no owner);
//   - PodDisruptionBudgets on a quarter of the Deployments, with the status the disruption
//     controller would write;
//   - every bound pod Running through the status subresource: conditions, container statuses,
//     podIP, hostIP, startTime, as a kubelet writes them. A few pods that fit nowhere stay
//     Pending and unscheduled.
//
// The load is uneven so that the balancing strategies have work: some nodes are cold (few pods)
// and some hot, some Deployments have replicas stacked on one node (RemoveDuplicates), and
// Deployments with a zone topology spread constraint are placed skewed across the zones
// (RemovePodsViolatingTopologySpreadConstraint).
//
// Usage: loader --kubeconfig FILE --nodes N --pods N [--seed N] [--workers N] [--summary FILE]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	mi = int64(1) << 20
	gi = int64(1) << 30

	kubeletVersion = "v1.36.3"
	zoneLabel      = "topology.kubernetes.io/zone"
)

var zones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

var appWords = []string{"web", "api", "worker", "cache", "frontend", "backend", "search", "payments",
	"orders", "auth", "ingest", "metrics", "gateway", "catalog", "billing", "notifier", "reports"}

// ---------------------------------------------------------------------------------------------
// The layout: which pods exist and where they sit, computed before anything is sent.

type nodePlan struct {
	name          string
	zone          int
	instanceType  string
	cpu           int64 // millicores of capacity
	memory        int64 // bytes of capacity
	maxPods       int64
	ready         bool
	unschedulable bool
	weight        float64
	kind          string // cold, hot, normal
	usedCPU       int64
	usedMemory    int64
	usedPods      int64
	ip            string
	nextPodIP     int
}

func (n *nodePlan) allocCPU() int64    { return n.cpu - 110 }
func (n *nodePlan) allocMemory() int64 { return n.memory - 1536*mi }
func (n *nodePlan) fits(cpu, memory int64) bool {
	return n.ready && !n.unschedulable && n.usedPods < n.maxPods &&
		n.usedCPU+cpu <= n.allocCPU() && n.usedMemory+memory <= n.allocMemory()
}

type workload struct {
	kind          string // Deployment, DaemonSet, Bare
	namespace     string
	app           string
	hash          string // pod-template-hash
	replicas      int
	cpu           int64 // millicores requested by the main container (0: BestEffort)
	memory        int64
	resources     int // 0 none, 1 requests, 2 requests and limits at twice, 3 limits equal
	sidecar       bool
	image         string
	port          int32
	emptyDir      bool
	spread        string // "", DoNotSchedule, ScheduleAnyway
	priorityClass string
	pdbAllowed    int // -1: no PDB
	stacked       bool
	deployUID     types.UID
	rsUID         types.UID
	dsUID         types.UID
}

func (w *workload) rsName() string { return w.app + "-" + w.hash }

// podRequests is what one pod requests in total (main container and sidecar).
func (w *workload) podRequests() (int64, int64) {
	if w.resources == 0 {
		return 0, 0
	}
	cpu, memory := w.cpu, w.memory
	if w.sidecar {
		cpu += 50
		memory += 64 * mi
	}
	return cpu, memory
}

type podPlan struct {
	workload int
	node     int // -1: Pending
	name     string
}

type layout struct {
	nodes      []*nodePlan
	namespaces []string
	workloads  []*workload
	pods       []podPlan
}

type rng struct{ *rand.Rand }

func (r rng) chance(p float64) bool { return r.Float64() < p }
func (r rng) below(n int) int       { return r.IntN(n) }
func (r rng) weighted(w []float64) int {
	total := 0.0
	for _, x := range w {
		total += x
	}
	x := r.Float64() * total
	for i, v := range w {
		if x < v {
			return i
		}
		x -= v
	}
	return len(w) - 1
}

const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789"

func (r rng) suffix(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = suffixAlphabet[r.below(len(suffixAlphabet))]
	}
	return string(b)
}

func (r rng) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[r.below(16)]
	}
	return string(b)
}

func (r rng) uid() types.UID {
	h := r.hex(32)
	return types.UID(h[0:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:32])
}

// picker draws a node with probability proportional to its weight.
type picker struct {
	cumulative []float64
	index      []int
}

func newPicker(nodes []*nodePlan, keep func(*nodePlan) bool) *picker {
	p := &picker{}
	acc := 0.0
	for i, n := range nodes {
		if keep(n) && n.weight > 0 {
			acc += n.weight
			p.cumulative = append(p.cumulative, acc)
			p.index = append(p.index, i)
		}
	}
	return p
}

func (p *picker) draw(r rng) int {
	if len(p.index) == 0 {
		return -1
	}
	x := r.Float64() * p.cumulative[len(p.cumulative)-1]
	i := sort.SearchFloat64s(p.cumulative, x)
	if i >= len(p.index) {
		i = len(p.index) - 1
	}
	return p.index[i]
}

func planLayout(nodeCount, podCount int, seed uint64) *layout {
	r := rng{rand.New(rand.NewPCG(seed, 0x5dee_ce66_d1ce_4e5b))}
	l := &layout{}
	for i := 0; i < nodeCount; i++ {
		n := &nodePlan{zone: i % len(zones), ready: i%300 != 11, unschedulable: i%200 == 17}
		switch r.weighted([]float64{0.25, 0.6, 0.15}) {
		case 0:
			n.instanceType, n.cpu, n.memory, n.maxPods = "m5.2xlarge", 8000, 32*gi, 110
		case 1:
			n.instanceType, n.cpu, n.memory, n.maxPods = "m5.4xlarge", 16000, 64*gi, 110
		default:
			n.instanceType, n.cpu, n.memory, n.maxPods = "m5.8xlarge", 32000, 128*gi, 234
		}
		load := 0.0
		switch r.weighted([]float64{0.12, 0.15, 0.73}) {
		case 0:
			n.kind, load = "cold", 0.1
		case 1:
			n.kind, load = "hot", 2.6
		default:
			n.kind, load = "normal", 0.8+0.4*r.Float64()
		}
		n.weight = load * float64(n.cpu) / 16000
		a, b := 16+i/250, 2+i%250
		n.ip = fmt.Sprintf("10.0.%d.%d", a, b)
		n.name = fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", a, b)
		l.nodes = append(l.nodes, n)
	}
	all := newPicker(l.nodes, func(*nodePlan) bool { return true })
	byZone := make([]*picker, len(zones))
	for z := range zones {
		byZone[z] = newPicker(l.nodes, func(n *nodePlan) bool { return n.zone == z })
	}

	nsCount := min(max(podCount/750, 3), 400)
	for i := 0; i < nsCount; i++ {
		l.namespaces = append(l.namespaces, fmt.Sprintf("team-%03d", i))
	}

	// One DaemonSet pod on every node (while the pod budget lasts: at most a fifth of it).
	ds := &workload{kind: "DaemonSet", namespace: "kube-system", app: "kube-proxy", hash: r.suffix(9),
		cpu: 100, memory: 128 * mi, resources: 2, image: "registry.k8s.io/kube-proxy:" + kubeletVersion,
		priorityClass: "system-node-critical", pdbAllowed: -1, dsUID: r.uid()}
	l.workloads = append(l.workloads, ds)
	for i, n := range l.nodes {
		if len(l.pods) >= podCount/5 {
			break
		}
		ds.replicas++
		n.usedCPU += ds.cpu
		n.usedMemory += ds.memory
		n.usedPods++
		l.pods = append(l.pods, podPlan{workload: 0, node: i, name: "kube-proxy-" + r.suffix(5)})
	}

	group := 0
	for len(l.pods) < podCount {
		left := podCount - len(l.pods)
		w := &workload{kind: "Deployment", pdbAllowed: -1}
		if r.chance(0.03) {
			w.kind = "Bare"
		}
		switch {
		case w.kind == "Bare":
			w.replicas = 1
		default:
			switch r.weighted([]float64{0.35, 0.37, 0.22, 0.06}) {
			case 0:
				w.replicas = 1 + r.below(3)
			case 1:
				w.replicas = 4 + r.below(9)
			case 2:
				w.replicas = 13 + r.below(48)
			default:
				w.replicas = 61 + r.below(240)
			}
		}
		w.replicas = min(w.replicas, left)
		w.namespace = l.namespaces[r.below(len(l.namespaces))]
		w.app = fmt.Sprintf("%s-%05d", appWords[r.below(len(appWords))], group)
		group++
		w.hash = r.suffix(9)
		registry := "registry.example.com"
		if r.chance(0.3) {
			registry = "ghcr.io/example"
		}
		w.image = fmt.Sprintf("%s/%s/%s:1.%d.%d", registry, w.namespace, w.app, r.below(40), r.below(20))
		w.sidecar = r.chance(0.15)
		w.cpu = []int64{50, 100, 100, 150, 200, 250, 250, 300, 500, 750}[r.below(10)]
		w.memory = w.cpu * int64(2+r.below(3)) * mi
		w.resources = r.weighted([]float64{0.06, 0.2, 0.54, 0.2})
		if r.chance(0.75) {
			w.port = []int32{80, 8080, 8443, 9090, 3000}[r.below(5)]
		}
		w.emptyDir = r.chance(0.04)
		switch r.weighted([]float64{0.8, 0.1, 0.1}) {
		case 1:
			w.priorityClass = "high-priority"
		case 2:
			w.priorityClass = "low-priority"
		}
		if w.kind == "Deployment" {
			if w.replicas >= 6 && r.chance(0.3) {
				w.spread = "DoNotSchedule"
				if r.chance(0.2) {
					w.spread = "ScheduleAnyway"
				}
			}
			w.stacked = w.replicas >= 3 && r.chance(0.25)
			if w.replicas >= 2 && r.chance(0.25) {
				w.pdbAllowed = 1 + r.below(3)
				if r.chance(0.1) {
					w.pdbAllowed = 0
				}
			}
			w.deployUID, w.rsUID = r.uid(), r.uid()
		}
		l.workloads = append(l.workloads, w)
		wi := len(l.workloads) - 1
		cpu, memory := w.podRequests()
		zoneWeights := []float64{1, 1, 1}
		if w.spread != "" {
			zoneWeights = []float64{0.62, 0.26, 0.12}
			rot := r.below(3)
			zoneWeights = append(zoneWeights[rot:], zoneWeights[:rot]...)
		}
		previous := -1
		for k := 0; k < w.replicas; k++ {
			chosen := -1
			if w.stacked && previous >= 0 && r.chance(0.35) && l.nodes[previous].fits(cpu, memory) {
				chosen = previous
			}
			for try := 0; chosen < 0 && try < 8; try++ {
				p := all
				if w.spread != "" {
					p = byZone[r.weighted(zoneWeights)]
				}
				if c := p.draw(r); c >= 0 && l.nodes[c].fits(cpu, memory) {
					chosen = c
				}
			}
			if chosen < 0 { // first fit from a random start
				start := r.below(len(l.nodes))
				for j := 0; j < len(l.nodes); j++ {
					c := (start + j) % len(l.nodes)
					if l.nodes[c].kind != "cold" && l.nodes[c].fits(cpu, memory) {
						chosen = c
						break
					}
				}
			}
			if chosen >= 0 {
				n := l.nodes[chosen]
				n.usedCPU += cpu
				n.usedMemory += memory
				n.usedPods++
				previous = chosen
			}
			name := w.app
			if w.kind == "Deployment" {
				name = w.rsName() + "-" + r.suffix(5)
			}
			l.pods = append(l.pods, podPlan{workload: wi, node: chosen, name: name})
		}
	}
	return l
}

// ---------------------------------------------------------------------------------------------
// The objects.

func quantityCPU(milli int64) resource.Quantity {
	return *resource.NewMilliQuantity(milli, resource.DecimalSI)
}
func quantityBytes(b int64) resource.Quantity { return *resource.NewQuantity(b, resource.BinarySI) }

func nodeObject(n *nodePlan, created time.Time, r rng) *corev1.Node {
	hostname := strings.TrimSuffix(n.name, ".ec2.internal")
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              quantityCPU(n.cpu),
		corev1.ResourceMemory:           quantityBytes(n.memory),
		corev1.ResourcePods:             *resource.NewQuantity(n.maxPods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: quantityBytes(100 * gi),
		"hugepages-2Mi":                 quantityBytes(0),
	}
	allocatable := corev1.ResourceList{
		corev1.ResourceCPU:              quantityCPU(n.allocCPU()),
		corev1.ResourceMemory:           quantityBytes(n.allocMemory()),
		corev1.ResourcePods:             *resource.NewQuantity(n.maxPods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: quantityBytes(90 * gi),
		"hugepages-2Mi":                 quantityBytes(0),
	}
	now := metav1.NewTime(created)
	readyStatus, readyReason, readyMessage := corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"
	if !n.ready {
		readyStatus, readyReason, readyMessage = corev1.ConditionFalse, "KubeletNotReady", "container runtime network not ready: NetworkReady=false"
	}
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, LastHeartbeatTime: now, LastTransitionTime: now, Reason: reason, Message: msg}
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: n.name,
			Labels: map[string]string{
				"kubernetes.io/hostname":           hostname,
				"kubernetes.io/os":                 "linux",
				"kubernetes.io/arch":               "amd64",
				"beta.kubernetes.io/os":            "linux",
				"beta.kubernetes.io/arch":          "amd64",
				"node.kubernetes.io/instance-type": n.instanceType,
				zoneLabel:                          zones[n.zone],
				"topology.kubernetes.io/region":    "us-east-1",
				"eks.amazonaws.com/nodegroup":      "workers-" + n.instanceType,
			},
			Annotations: map[string]string{
				"node.alpha.kubernetes.io/ttl":                           "0",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
			},
		},
		Spec: corev1.NodeSpec{
			ProviderID:    fmt.Sprintf("aws:///%s/i-0%s", zones[n.zone], r.hex(16)),
			Unschedulable: n.unschedulable,
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: allocatable,
			Phase:       "",
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
				cond(corev1.NodeReady, readyStatus, readyReason, readyMessage),
			},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: n.ip},
				{Type: corev1.NodeHostName, Address: n.name},
				{Type: corev1.NodeInternalDNS, Address: n.name},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo: corev1.NodeSystemInfo{
				MachineID:               r.hex(32),
				SystemUUID:              "ec2" + r.hex(29),
				BootID:                  string(r.uid()),
				KernelVersion:           "6.1.140-154.222.amzn2023.x86_64",
				OSImage:                 "Amazon Linux 2023.7.20250623",
				ContainerRuntimeVersion: "containerd://2.0.5",
				KubeletVersion:          kubeletVersion,
				OperatingSystem:         "linux",
				Architecture:            "amd64",
			},
			Images: []corev1.ContainerImage{
				{Names: []string{"registry.k8s.io/kube-proxy@sha256:" + r.hex(64), "registry.k8s.io/kube-proxy:" + kubeletVersion}, SizeBytes: 30_000_000},
				{Names: []string{"registry.k8s.io/pause@sha256:" + r.hex(64), "registry.k8s.io/pause:3.10"}, SizeBytes: 320_000},
			},
		},
	}
	if n.unschedulable {
		node.Spec.Taints = []corev1.Taint{{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule, TimeAdded: &now}}
	}
	if !n.ready {
		// As TaintNodesByCondition and the node lifecycle controller taint a NotReady node.
		node.Spec.Taints = append(node.Spec.Taints,
			corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule},
			corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoExecute, TimeAdded: &now})
	}
	return node
}

func taintsEqual(a, b []corev1.Taint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || a[i].Value != b[i].Value || a[i].Effect != b[i].Effect {
			return false
		}
	}
	return true
}

func podLabels(w *workload) map[string]string {
	switch w.kind {
	case "Deployment":
		return map[string]string{"app.kubernetes.io/name": w.app, "pod-template-hash": w.hash}
	case "DaemonSet":
		return map[string]string{"k8s-app": w.app, "controller-revision-hash": w.hash, "pod-template-generation": "1"}
	}
	return map[string]string{"app.kubernetes.io/name": w.app}
}

func podSpec(w *workload) corev1.PodSpec {
	main := corev1.Container{
		Name:                     "app",
		Image:                    w.image,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		TerminationMessagePath:   "/dev/termination-log",
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		Env: []corev1.EnvVar{
			{Name: "APP_NAME", Value: w.app},
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
		},
	}
	if w.port != 0 {
		main.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: w.port, Protocol: corev1.ProtocolTCP}}
		main.ReadinessProbe = &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(w.port), Scheme: corev1.URISchemeHTTP}},
			PeriodSeconds:    10,
			TimeoutSeconds:   1,
			SuccessThreshold: 1,
			FailureThreshold: 3,
		}
	}
	setResources := func(c *corev1.Container, cpu, memory int64) {
		switch w.resources {
		case 1:
			c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: quantityCPU(cpu), corev1.ResourceMemory: quantityBytes(memory)}
		case 2:
			c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: quantityCPU(cpu), corev1.ResourceMemory: quantityBytes(memory)}
			c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: quantityCPU(2 * cpu), corev1.ResourceMemory: quantityBytes(2 * memory)}
		case 3:
			c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: quantityCPU(cpu), corev1.ResourceMemory: quantityBytes(memory)}
			c.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: quantityCPU(cpu), corev1.ResourceMemory: quantityBytes(memory)}
		}
	}
	setResources(&main, w.cpu, w.memory)
	spec := corev1.PodSpec{
		Containers:                    []corev1.Container{main},
		RestartPolicy:                 corev1.RestartPolicyAlways,
		TerminationGracePeriodSeconds: ptr(int64(30)),
		DNSPolicy:                     corev1.DNSClusterFirst,
		SchedulerName:                 corev1.DefaultSchedulerName,
		SecurityContext:               &corev1.PodSecurityContext{},
		EnableServiceLinks:            ptr(true),
		PriorityClassName:             w.priorityClass,
	}
	if w.sidecar {
		c := corev1.Container{
			Name:                     "envoy",
			Image:                    "docker.io/envoyproxy/envoy:v1.34.1",
			ImagePullPolicy:          corev1.PullIfNotPresent,
			TerminationMessagePath:   "/dev/termination-log",
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			Ports:                    []corev1.ContainerPort{{Name: "admin", ContainerPort: 9901, Protocol: corev1.ProtocolTCP}},
		}
		setResources(&c, 50, 64*mi)
		spec.Containers = append(spec.Containers, c)
	}
	if w.emptyDir {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		spec.Containers[0].VolumeMounts = append(spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "scratch", MountPath: "/tmp"})
	}
	if w.spread != "" {
		spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew:           1,
			TopologyKey:       zoneLabel,
			WhenUnsatisfiable: corev1.UnsatisfiableConstraintAction(w.spread),
			LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": w.app}},
			MatchLabelKeys:    []string{"pod-template-hash"},
		}}
	}
	if w.kind == "DaemonSet" {
		spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		spec.HostNetwork = true
		spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
		spec.ServiceAccountName = "default"
	}
	return spec
}

func ptr[T any](v T) *T { return &v }

func podObject(l *layout, p podPlan) *corev1.Pod {
	w := l.workloads[p.workload]
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: w.namespace, Labels: podLabels(w)},
		Spec:       podSpec(w),
	}
	switch w.kind {
	case "Deployment":
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: w.rsName(), UID: w.rsUID,
			Controller: ptr(true), BlockOwnerDeletion: ptr(true)}}
	case "DaemonSet":
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: w.app, UID: w.dsUID,
			Controller: ptr(true), BlockOwnerDeletion: ptr(true)}}
		// What the DaemonSet controller sets: the pod may only run on its node.
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{l.nodes[p.node].name}}},
			}}},
		}}
	case "Bare":
		pod.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + p.name + `"}}`}
	}
	if p.node >= 0 {
		pod.Spec.NodeName = l.nodes[p.node].name
	}
	return pod
}

// runningStatus is the status a kubelet writes for a pod whose containers run.
func runningStatus(pod *corev1.Pod, n *nodePlan, podIP string, started time.Time, r rng) corev1.PodStatus {
	t := metav1.NewTime(started)
	ready := metav1.NewTime(started.Add(4 * time.Second))
	status := pod.Status // keeps what the apiserver set (qosClass)
	status.Phase = corev1.PodRunning
	status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: t},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: t},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: ready},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: ready},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t},
	}
	status.HostIP = n.ip
	status.HostIPs = []corev1.HostIP{{IP: n.ip}}
	status.PodIP = podIP
	status.PodIPs = []corev1.PodIP{{IP: podIP}}
	status.StartTime = &t
	status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		status.ContainerStatuses = append(status.ContainerStatuses, corev1.ContainerStatus{
			Name:         c.Name,
			State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
			Ready:        true,
			Started:      ptr(true),
			RestartCount: 0,
			Image:        c.Image,
			ImageID:      strings.SplitN(c.Image, ":", 2)[0] + "@sha256:" + r.hex(64),
			ContainerID:  "containerd://" + r.hex(64),
		})
	}
	return status
}

func pendingStatus(pod *corev1.Pod, at time.Time) corev1.PodStatus {
	status := pod.Status
	status.Phase = corev1.PodPending
	status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(at),
		Reason: corev1.PodReasonUnschedulable, Message: "0/N nodes are available: Insufficient cpu."}}
	return status
}

// ---------------------------------------------------------------------------------------------
// Sending.

type loader struct {
	ctx     context.Context
	client  kubernetes.Interface
	l       *layout
	seed    uint64
	created time.Time
	errors  atomic.Int64
	done    atomic.Int64
}

// parallel runs f(0..n-1) on workers goroutines and returns the first error.
func parallel(ctx context.Context, n, workers int, f func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for w := 0; w < min(workers, max(n, 1)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		// cancelled from outside
		return ctx.Err()
	}
	return first
}

// retry retries f on errors a loaded apiserver returns under pressure.
func retry(ctx context.Context, f func() error) error {
	var err error
	for attempt := 0; attempt < 8; attempt++ {
		err = f()
		if err == nil || !(apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
			apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsConflict(err) ||
			strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "EOF")) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(100*(attempt+1)) * time.Millisecond):
		}
	}
	return err
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func (ld *loader) rngFor(kind string, i int) rng {
	h := uint64(14695981039346656037)
	for _, c := range []byte(kind) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return rng{rand.New(rand.NewPCG(ld.seed^h, uint64(i)))}
}

func (ld *loader) namespaces(workers int) error {
	return parallel(ld.ctx, len(ld.l.namespaces), workers, func(i int) error {
		name := ld.l.namespaces[i]
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": name}}}
		if err := retry(ld.ctx, func() error {
			_, err := ld.client.CoreV1().Namespaces().Create(ld.ctx, ns, metav1.CreateOptions{})
			return ignoreExists(err)
		}); err != nil {
			return fmt.Errorf("namespace %s: %w", name, err)
		}
		// The service account controller would add it; pods cannot be created without it.
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}}
		return retry(ld.ctx, func() error {
			_, err := ld.client.CoreV1().ServiceAccounts(name).Create(ld.ctx, sa, metav1.CreateOptions{})
			if err = ignoreExists(err); err != nil {
				return fmt.Errorf("serviceaccount %s/default: %w", name, err)
			}
			return nil
		})
	})
}

func (ld *loader) priorityClasses() error {
	for _, pc := range []*schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "high-priority"}, Value: 100000, Description: "user-facing services"},
		{ObjectMeta: metav1.ObjectMeta{Name: "low-priority"}, Value: -100, Description: "batch and best-effort work",
			PreemptionPolicy: ptr(corev1.PreemptNever)},
	} {
		if err := retry(ld.ctx, func() error {
			_, err := ld.client.SchedulingV1().PriorityClasses().Create(ld.ctx, pc, metav1.CreateOptions{})
			return ignoreExists(err)
		}); err != nil {
			return fmt.Errorf("priorityclass %s: %w", pc.Name, err)
		}
	}
	return nil
}

func (ld *loader) nodes(workers int) error {
	return parallel(ld.ctx, len(ld.l.nodes), workers, func(i int) error {
		n := ld.l.nodes[i]
		obj := nodeObject(n, ld.created.Add(-time.Duration(40+i%500)*time.Hour), ld.rngFor("node", i))
		err := retry(ld.ctx, func() error {
			got, err := ld.client.CoreV1().Nodes().Create(ld.ctx, obj, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				got, err = ld.client.CoreV1().Nodes().Get(ld.ctx, obj.Name, metav1.GetOptions{})
			}
			if err != nil {
				return err
			}
			// The TaintNodesByCondition admission plugin taints every new Node with
			// node.kubernetes.io/not-ready:NoSchedule; the node lifecycle controller lifts it
			// once the node reports Ready. That controller does not run here, so do what it does.
			if !taintsEqual(got.Spec.Taints, obj.Spec.Taints) {
				got.Spec.Taints = obj.Spec.Taints
				if got, err = ld.client.CoreV1().Nodes().Update(ld.ctx, got, metav1.UpdateOptions{}); err != nil {
					return err
				}
			}
			// A Node keeps the status it is created with; post it if it did not.
			if _, ok := got.Status.Allocatable[corev1.ResourcePods]; !ok {
				got.Status = obj.Status
				_, err = ld.client.CoreV1().Nodes().UpdateStatus(ld.ctx, got, metav1.UpdateOptions{})
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("node %s: %w", n.name, err)
		}
		return nil
	})
}

// owners creates the DaemonSet, the Deployments with their ReplicaSets, and the PDBs.
func (ld *loader) owners(workers int) error {
	ws := ld.l.workloads
	return parallel(ld.ctx, len(ws), workers, func(i int) error {
		w := ws[i]
		if w.kind == "Bare" {
			return nil
		}
		template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: podLabels(w)}, Spec: podSpec(w)}
		apps := ld.client.AppsV1()
		ready := int32(w.replicas)
		if w.kind == "DaemonSet" {
			delete(template.Labels, "controller-revision-hash")
			delete(template.Labels, "pod-template-generation")
			ds := &appsv1.DaemonSet{
				ObjectMeta: metav1.ObjectMeta{Name: w.app, Namespace: w.namespace, Labels: map[string]string{"k8s-app": w.app}},
				Spec: appsv1.DaemonSetSpec{
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": w.app}},
					Template: template,
				},
			}
			return retry(ld.ctx, func() error {
				got, err := apps.DaemonSets(w.namespace).Create(ld.ctx, ds, metav1.CreateOptions{})
				if apierrors.IsAlreadyExists(err) {
					got, err = apps.DaemonSets(w.namespace).Get(ld.ctx, ds.Name, metav1.GetOptions{})
				}
				if err != nil {
					return fmt.Errorf("daemonset %s: %w", ds.Name, err)
				}
				w.dsUID = got.UID
				got.Status = appsv1.DaemonSetStatus{CurrentNumberScheduled: ready, DesiredNumberScheduled: ready, NumberReady: ready,
					NumberAvailable: ready, UpdatedNumberScheduled: ready, ObservedGeneration: got.Generation}
				_, err = apps.DaemonSets(w.namespace).UpdateStatus(ld.ctx, got, metav1.UpdateOptions{})
				return err
			})
		}
		// Deployment, then its ReplicaSet (owned by it), as the deployment controller makes them.
		deployLabels := map[string]string{"app.kubernetes.io/name": w.app}
		dtemplate := *template.DeepCopy()
		delete(dtemplate.Labels, "pod-template-hash")
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: w.app, Namespace: w.namespace, Labels: deployLabels,
				Annotations: map[string]string{"deployment.kubernetes.io/revision": "1"}},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr(int32(w.replicas)),
				Selector: &metav1.LabelSelector{MatchLabels: deployLabels},
				Template: dtemplate,
			},
		}
		err := retry(ld.ctx, func() error {
			got, err := apps.Deployments(w.namespace).Create(ld.ctx, d, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				got, err = apps.Deployments(w.namespace).Get(ld.ctx, d.Name, metav1.GetOptions{})
			}
			if err != nil {
				return fmt.Errorf("deployment %s/%s: %w", w.namespace, d.Name, err)
			}
			w.deployUID = got.UID
			got.Status = appsv1.DeploymentStatus{ObservedGeneration: got.Generation, Replicas: ready, UpdatedReplicas: ready,
				ReadyReplicas: ready, AvailableReplicas: ready,
				Conditions: []appsv1.DeploymentCondition{
					{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."},
					{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", w.rsName())},
				}}
			_, err = apps.Deployments(w.namespace).UpdateStatus(ld.ctx, got, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return err
		}
		rsSelector := map[string]string{"app.kubernetes.io/name": w.app, "pod-template-hash": w.hash}
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: w.rsName(), Namespace: w.namespace, Labels: rsSelector,
				Annotations: map[string]string{"deployment.kubernetes.io/desired-replicas": fmt.Sprint(w.replicas),
					"deployment.kubernetes.io/max-replicas": fmt.Sprint(w.replicas + 1), "deployment.kubernetes.io/revision": "1"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: w.app, UID: w.deployUID,
					Controller: ptr(true), BlockOwnerDeletion: ptr(true)}}},
			Spec: appsv1.ReplicaSetSpec{
				Replicas: ptr(int32(w.replicas)),
				Selector: &metav1.LabelSelector{MatchLabels: rsSelector},
				Template: template,
			},
		}
		err = retry(ld.ctx, func() error {
			got, err := apps.ReplicaSets(w.namespace).Create(ld.ctx, rs, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				got, err = apps.ReplicaSets(w.namespace).Get(ld.ctx, rs.Name, metav1.GetOptions{})
			}
			if err != nil {
				return fmt.Errorf("replicaset %s/%s: %w", w.namespace, rs.Name, err)
			}
			w.rsUID = got.UID
			got.Status = appsv1.ReplicaSetStatus{Replicas: ready, FullyLabeledReplicas: ready, ReadyReplicas: ready,
				AvailableReplicas: ready, ObservedGeneration: got.Generation}
			_, err = apps.ReplicaSets(w.namespace).UpdateStatus(ld.ctx, got, metav1.UpdateOptions{})
			return err
		})
		if err != nil || w.pdbAllowed < 0 {
			return err
		}
		pdb := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: w.app, Namespace: w.namespace},
			Spec: policyv1.PodDisruptionBudgetSpec{
				Selector:       &metav1.LabelSelector{MatchLabels: deployLabels},
				MaxUnavailable: ptr(intstr.FromInt32(int32(w.pdbAllowed))),
			},
		}
		return retry(ld.ctx, func() error {
			got, err := ld.client.PolicyV1().PodDisruptionBudgets(w.namespace).Create(ld.ctx, pdb, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				got, err = ld.client.PolicyV1().PodDisruptionBudgets(w.namespace).Get(ld.ctx, pdb.Name, metav1.GetOptions{})
			}
			if err != nil {
				return fmt.Errorf("pdb %s/%s: %w", w.namespace, pdb.Name, err)
			}
			// What the disruption controller writes once all pods are healthy.
			expected := int32(w.replicas)
			desired := max(0, expected-int32(w.pdbAllowed))
			got.Status = policyv1.PodDisruptionBudgetStatus{
				ObservedGeneration: got.Generation,
				DisruptionsAllowed: expected - desired,
				CurrentHealthy:     expected,
				DesiredHealthy:     desired,
				ExpectedPods:       expected,
				Conditions: []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionTrue,
					Reason: policyv1.SufficientPodsReason, LastTransitionTime: metav1.NewTime(ld.created), ObservedGeneration: got.Generation}},
			}
			if w.pdbAllowed == 0 {
				got.Status.Conditions[0].Status = metav1.ConditionFalse
				got.Status.Conditions[0].Reason = policyv1.InsufficientPodsReason
			}
			_, err = ld.client.PolicyV1().PodDisruptionBudgets(w.namespace).UpdateStatus(ld.ctx, got, metav1.UpdateOptions{})
			return err
		})
	})
}

func (ld *loader) pods(workers int) error {
	l := ld.l
	// Pod IPs: each node owns a /24 of 10.64.0.0/10 (node i: 10.(64+i/256).(i%256).0/24).
	podIPs := make([]string, len(l.pods))
	for i, p := range l.pods {
		if p.node < 0 {
			continue
		}
		w := l.workloads[p.workload]
		n := l.nodes[p.node]
		if w.kind == "DaemonSet" { // hostNetwork
			podIPs[i] = n.ip
			continue
		}
		n.nextPodIP++
		podIPs[i] = fmt.Sprintf("10.%d.%d.%d", 64+p.node/256, p.node%256, 1+n.nextPodIP%254)
	}
	return parallel(ld.ctx, len(l.pods), workers, func(i int) error {
		p := l.pods[i]
		r := ld.rngFor("pod", i)
		obj := podObject(l, p)
		pods := ld.client.CoreV1().Pods(obj.Namespace)
		err := retry(ld.ctx, func() error {
			got, err := pods.Create(ld.ctx, obj, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				got, err = pods.Get(ld.ctx, obj.Name, metav1.GetOptions{})
				if err == nil && got.Status.Phase == corev1.PodRunning {
					return nil
				}
			}
			if err != nil {
				return err
			}
			if p.node < 0 {
				got.Status = pendingStatus(got, ld.created)
			} else {
				started := ld.created.Add(-time.Duration(r.below(30*24*3600)) * time.Second)
				got.Status = runningStatus(got, l.nodes[p.node], podIPs[i], started, r)
			}
			_, err = pods.UpdateStatus(ld.ctx, got, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("pod %s/%s: %w", obj.Namespace, obj.Name, err)
		}
		ld.done.Add(1)
		return nil
	})
}

// ---------------------------------------------------------------------------------------------

type summary struct {
	Seed              uint64         `json:"seed"`
	Nodes             int            `json:"nodes"`
	NodesByKind       map[string]int `json:"nodesByLoad"`
	NodesNotReady     int            `json:"nodesNotReady"`
	NodesCordoned     int            `json:"nodesCordoned"`
	Pods              int            `json:"pods"`
	PodsPending       int            `json:"podsPending"`
	DaemonSetPods     int            `json:"daemonSetPods"`
	BarePods          int            `json:"barePods"`
	Deployments       int            `json:"deployments"`
	SpreadDeployments int            `json:"deploymentsWithTopologySpread"`
	StackedDeployment int            `json:"deploymentsStacked"`
	PDBs              int            `json:"podDisruptionBudgets"`
	Namespaces        int            `json:"namespaces"`
	CPURequested      float64        `json:"cpuRequestedShareOfAllocatable"`
	LoadSeconds       float64        `json:"loadSeconds,omitempty"`
}

func summarize(l *layout, seed uint64) summary {
	s := summary{Seed: seed, Nodes: len(l.nodes), NodesByKind: map[string]int{}, Pods: len(l.pods), Namespaces: len(l.namespaces)}
	var used, alloc float64
	for _, n := range l.nodes {
		s.NodesByKind[n.kind]++
		if !n.ready {
			s.NodesNotReady++
		}
		if n.unschedulable {
			s.NodesCordoned++
		}
		used += float64(n.usedCPU)
		alloc += float64(n.allocCPU())
	}
	s.CPURequested = math.Round(1000*used/alloc) / 1000
	for _, p := range l.pods {
		if p.node < 0 {
			s.PodsPending++
		}
		switch l.workloads[p.workload].kind {
		case "DaemonSet":
			s.DaemonSetPods++
		case "Bare":
			s.BarePods++
		}
	}
	for _, w := range l.workloads {
		if w.kind != "Deployment" {
			continue
		}
		s.Deployments++
		if w.spread != "" {
			s.SpreadDeployments++
		}
		if w.stacked {
			s.StackedDeployment++
		}
		if w.pdbAllowed >= 0 {
			s.PDBs++
		}
	}
	return s
}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "admin kubeconfig (default $KUBECONFIG)")
	nodes := flag.Int("nodes", 300, "number of Nodes")
	podCount := flag.Int("pods", 9000, "number of Pods (DaemonSet pods included)")
	seed := flag.Uint64("seed", 1, "seed of the layout")
	workers := flag.Int("workers", 48, "concurrent requests")
	summaryFile := flag.String("summary", "", "write a JSON summary of the layout here")
	planOnly := flag.Bool("plan-only", false, "print the summary of the layout and exit (no cluster needed)")
	flag.Parse()
	if *nodes < 2 || *podCount < 1 {
		fmt.Fprintln(os.Stderr, "loader: need --nodes >= 2 and --pods >= 1")
		os.Exit(2)
	}

	l := planLayout(*nodes, *podCount, *seed)
	sum := summarize(l, *seed)
	if *planOnly {
		out, _ := json.MarshalIndent(sum, "", "  ")
		fmt.Println(string(out))
		return
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "loader: %v\n", err)
		os.Exit(1)
	}
	cfg.QPS = -1 // no client-side rate limit: the workers bound the concurrency
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.UserAgent = "live-bench-loader"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "loader: %v\n", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ld := &loader{ctx: ctx, client: client, l: l, seed: *seed, created: time.Now().UTC().Truncate(time.Second)}

	start := time.Now()
	step := func(name string, f func() error) {
		t := time.Now()
		if err := f(); err != nil {
			fmt.Fprintf(os.Stderr, "loader: %s: %v\n", name, err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "loader: %s done in %.1fs\n", name, time.Since(t).Seconds())
	}
	step("namespaces", func() error { return ld.namespaces(*workers) })
	step("priority classes", ld.priorityClasses)
	step(fmt.Sprintf("%d nodes", len(l.nodes)), func() error { return ld.nodes(*workers) })
	step("deployments, replicasets, daemonset, pdbs", func() error { return ld.owners(*workers) })

	progressDone := make(chan struct{})
	go func() {
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		t0, last := time.Now(), int64(0)
		for {
			select {
			case <-progressDone:
				return
			case <-tick.C:
				d := ld.done.Load()
				fmt.Fprintf(os.Stderr, "loader: %d/%d pods (%.0f/s now, %.0f/s overall)\n", d, len(l.pods),
					float64(d-last)/10, float64(d)/time.Since(t0).Seconds())
				last = d
			}
		}
	}()
	step(fmt.Sprintf("%d pods", len(l.pods)), func() error { return ld.pods(*workers) })
	close(progressDone)

	sum.LoadSeconds = math.Round(10*time.Since(start).Seconds()) / 10
	out, _ := json.MarshalIndent(sum, "", "  ")
	if *summaryFile != "" {
		if err := os.WriteFile(*summaryFile, append(out, '\n'), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "loader: %v\n", err)
			os.Exit(1)
		}
	}
	fmt.Println(string(out))
}
