// fake-kubelet does, for every Node in a cluster, the few things a kubelet does that tests of a
// descheduler need, and nothing else (no containers run):
//
//   - renews each Node's Lease in kube-node-lease every --heartbeat, and keeps its Ready condition
//     True (the pressure conditions False), re-posting the status when it is not so or its
//     lastHeartbeatTime is older than --node-status-report-frequency (as a kubelet does), so the
//     node lifecycle controller neither marks the node NotReady nor taints it;
//   - fills status.capacity/allocatable and nodeInfo of a Node created without them;
//   - moves every pod bound to a node (spec.nodeName set) from Pending to Running, with Ready
//     conditions, container statuses, a podIP, the hostIP and startTime;
//   - finishes graceful deletion as a kubelet does once its containers stop: a bound pod with
//     deletionTimestamp set stays Running on its node (so kube-scheduler keeps counting its
//     requests there) for its grace period (deletionGracePeriodSeconds, which the API server
//     set from the pod's terminationGracePeriodSeconds or the delete call's gracePeriodSeconds)
//     times --grace-scale, then is deleted with grace period 0. A grace period of 0, or
//     --grace-scale 0 (the default), deletes it at once;
//   - with --ready-delay, a started pod becomes Ready only that long after it started.
//
// Per pod, annotations change that:
//
//	fake-kubelet/start-delay: "20s"   stay Pending this long after creation (default --pod-start-delay)
//	fake-kubelet/ready: "false"       run, but never become Ready (containers not ready)
//
// Usage: fake-kubelet --kubeconfig PATH [--heartbeat 10s] [--pod-start-delay 0s] [--workers 4]
//
//	[--grace-scale 0.1] [--ready-delay 1s]
//
// --grace-scale and --ready-delay default to $FAKE_KUBELET_GRACE_SCALE and
// $FAKE_KUBELET_READY_DELAY when set.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	clientversion "k8s.io/client-go/pkg/version"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

const (
	leaseNamespace       = "kube-node-lease"
	startDelayAnnotation = "fake-kubelet/start-delay"
	readyAnnotation      = "fake-kubelet/ready"
)

type fakeKubelet struct {
	client     kubernetes.Interface
	nodes      corelisters.NodeLister
	pods       corelisters.PodLister
	nodeQueue  workqueue.TypedRateLimitingInterface[string]
	podQueue   workqueue.TypedRateLimitingInterface[string]
	heartbeat  time.Duration
	reportFreq time.Duration
	startDelay time.Duration
	graceScale float64
	readyDelay time.Duration
	version    string
	leaseSecs  int32
	capacity   corev1.ResourceList
	nextPodIP  atomic.Uint32
	podNetwork net.IP
}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "path to a kubeconfig (default $KUBECONFIG)")
	heartbeat := flag.Duration("heartbeat", 10*time.Second, "how often each node's Ready condition and Lease are renewed")
	reportFreq := flag.Duration("node-status-report-frequency", time.Minute, "how old a node's Ready lastHeartbeatTime may get before the status is posted again")
	startDelay := flag.Duration("pod-start-delay", 0, "how long a bound pod stays Pending after its creation (annotation "+startDelayAnnotation+" overrides)")
	workers := flag.Int("workers", 4, "pods handled in parallel")
	cpu := flag.String("default-cpu", "4", "status.capacity cpu for a node created without capacity")
	memory := flag.String("default-memory", "8Gi", "status.capacity memory for a node created without capacity")
	pods := flag.String("default-pods", "110", "status.capacity pods for a node created without capacity")
	podCIDR := flag.String("pod-network", "10.244.0.0", "first address of the /16 that pod IPs are taken from")
	graceScale := flag.Float64("grace-scale", envFloat("FAKE_KUBELET_GRACE_SCALE", 0), "how much of each terminating pod's grace period it stays Running before it is deleted (0.1: 30s become 3s; 0: deleted at once)")
	readyDelay := flag.Duration("ready-delay", envDuration("FAKE_KUBELET_READY_DELAY", 0), "how long a started pod runs before it becomes Ready")
	klog.InitFlags(nil)
	flag.Parse()

	if *kubeconfig == "" {
		klog.Fatal("--kubeconfig is required")
	}
	if *graceScale < 0 || math.IsNaN(*graceScale) || math.IsInf(*graceScale, 0) {
		klog.Fatalf("--grace-scale %v: must be a finite number, 0 or more (0.1 keeps a pod terminating for a tenth of its grace period)", *graceScale)
	}
	if *readyDelay < 0 {
		klog.Fatalf("--ready-delay %v: must be 0 or more", *readyDelay)
	}
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		klog.Fatalf("loading kubeconfig %s: %v", *kubeconfig, err)
	}
	config.UserAgent = "fake-kubelet"
	config.QPS = 200
	config.Burst = 400
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		klog.Fatalf("building client: %v", err)
	}
	network := net.ParseIP(*podCIDR).To4()
	if network == nil {
		klog.Fatalf("--pod-network %q is not an IPv4 address", *podCIDR)
	}
	capacity := corev1.ResourceList{}
	for name, value := range map[corev1.ResourceName]string{corev1.ResourceCPU: *cpu, corev1.ResourceMemory: *memory, corev1.ResourcePods: *pods} {
		q, err := resource.ParseQuantity(value)
		if err != nil {
			klog.Fatalf("default %s %q: %v", name, value, err)
		}
		capacity[name] = q
	}

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()

	factory := informers.NewSharedInformerFactory(client, 0)
	nodeInformer := factory.Core().V1().Nodes()
	podInformer := factory.Core().V1().Pods()
	fk := &fakeKubelet{
		client:     client,
		nodes:      nodeInformer.Lister(),
		pods:       podInformer.Lister(),
		nodeQueue:  workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "nodes"}),
		podQueue:   workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "pods"}),
		heartbeat:  *heartbeat,
		reportFreq: *reportFreq,
		startDelay: *startDelay,
		graceScale: *graceScale,
		readyDelay: *readyDelay,
		version:    kubeletVersion(),
		leaseSecs:  int32(max(4*heartbeat.Seconds(), 40)),
		capacity:   capacity,
		podNetwork: network,
	}

	must(nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { fk.nodeQueue.Add(obj.(*corev1.Node).Name) },
		UpdateFunc: func(_, obj interface{}) {
			// Our own heartbeats come back as updates: only react when something undid them.
			if node := obj.(*corev1.Node); !nodeIsReady(node) || len(node.Status.Allocatable) == 0 {
				fk.nodeQueue.Add(node.Name)
			}
		},
	}))
	must(podInformer.Informer().AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj interface{}) bool {
			pod, ok := obj.(*corev1.Pod)
			return ok && pod.Spec.NodeName != ""
		},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    fk.enqueuePod,
			UpdateFunc: func(_, obj interface{}) { fk.enqueuePod(obj) },
		},
	}))

	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			klog.Fatalf("cache for %v did not sync", typ)
		}
	}
	klog.InfoS("fake-kubelet started", "heartbeat", fk.heartbeat, "workers", *workers, "graceScale", fk.graceScale, "readyDelay", fk.readyDelay)

	go fk.tickNodes(ctx)
	go runWorker(ctx, fk.nodeQueue, fk.syncNode)
	for i := 0; i < *workers; i++ {
		go runWorker(ctx, fk.podQueue, fk.syncPod)
	}
	<-ctx.Done()
	fk.nodeQueue.ShutDown()
	fk.podQueue.ShutDown()
	klog.InfoS("fake-kubelet stopped")
}

// kubeletVersion is the Kubernetes release the binary was built from (set by the build's
// -ldflags -X k8s.io/client-go/pkg/version.gitVersion=...), or a placeholder.
func kubeletVersion() string {
	if v := clientversion.Get().GitVersion; strings.HasPrefix(v, "v") && !strings.HasPrefix(v, "v0.0.0") {
		return v
	}
	return "v0.0.0-fake"
}

// envFloat is the value of the environment variable name as a number, or def when unset; a
// value that is not a number stops the process, naming the variable.
func envFloat(name string, def float64) float64 {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		klog.Fatalf("$%s=%q: not a number (use a factor such as 0.1)", name, v)
	}
	return f
}

// envDuration is the value of the environment variable name as a duration, or def when unset.
func envDuration(name string, def time.Duration) time.Duration {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		klog.Fatalf("$%s=%q: not a duration (use a value such as 2s)", name, v)
	}
	return d
}

func must(_ cache.ResourceEventHandlerRegistration, err error) {
	if err != nil {
		klog.Fatalf("registering event handler: %v", err)
	}
}

func (fk *fakeKubelet) enqueuePod(obj interface{}) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	fk.podQueue.Add(key)
}

// tickNodes queues every node once per heartbeat period.
func (fk *fakeKubelet) tickNodes(ctx context.Context) {
	ticker := time.NewTicker(fk.heartbeat)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			nodes, err := fk.nodes.List(labels.Everything())
			if err != nil {
				utilruntime.HandleError(err)
				continue
			}
			for _, node := range nodes {
				fk.nodeQueue.Add(node.Name)
			}
		}
	}
}

func runWorker(ctx context.Context, queue workqueue.TypedRateLimitingInterface[string], sync func(context.Context, string) error) {
	for {
		key, shutdown := queue.Get()
		if shutdown {
			return
		}
		if err := sync(ctx, key); err != nil {
			if ctx.Err() == nil {
				klog.ErrorS(err, "sync failed, retrying", "key", key)
			}
			queue.AddRateLimited(key)
		} else {
			queue.Forget(key)
		}
		queue.Done(key)
	}
}

// nodeStatusStale says whether the node's status must be posted: not Ready, missing what the
// fake kubelet fills in, or a heartbeat older than the report frequency.
func (fk *fakeKubelet) nodeStatusStale(node *corev1.Node) bool {
	if len(node.Status.Capacity) == 0 || len(node.Status.Allocatable) == 0 || node.Status.NodeInfo.KubeletVersion == "" {
		return true
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status != corev1.ConditionTrue || time.Since(c.LastHeartbeatTime.Time) >= fk.reportFreq
		}
	}
	return true
}

func nodeIsReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// syncNode renews a node's conditions and Lease.
func (fk *fakeKubelet) syncNode(ctx context.Context, name string) error {
	node, err := fk.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if fk.nodeStatusStale(node) {
		if err := fk.patchNodeStatus(ctx, node); err != nil {
			return fmt.Errorf("node %s status: %w", name, err)
		}
	}
	if err := fk.renewLease(ctx, node); err != nil {
		return fmt.Errorf("node %s lease: %w", name, err)
	}
	return nil
}

func (fk *fakeKubelet) patchNodeStatus(ctx context.Context, node *corev1.Node) error {
	now := metav1.NewTime(time.Now())
	transition := func(t corev1.NodeConditionType, want corev1.ConditionStatus) metav1.Time {
		for _, c := range node.Status.Conditions {
			if c.Type == t && c.Status == want && !c.LastTransitionTime.IsZero() {
				return c.LastTransitionTime
			}
		}
		return now
	}
	condition := func(t corev1.NodeConditionType, status corev1.ConditionStatus, reason, message string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: status, Reason: reason, Message: message, LastHeartbeatTime: now, LastTransitionTime: transition(t, status)}
	}
	status := map[string]interface{}{
		"conditions": []corev1.NodeCondition{
			condition(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "fake-kubelet has sufficient memory available"),
			condition(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "fake-kubelet has no disk pressure"),
			condition(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "fake-kubelet has sufficient PID available"),
			condition(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "fake-kubelet is posting ready status"),
		},
	}
	if node.Status.NodeInfo.KubeletVersion == "" {
		status["nodeInfo"] = corev1.NodeSystemInfo{
			KubeletVersion: fk.version, OperatingSystem: "linux", Architecture: "amd64",
			ContainerRuntimeVersion: "fake://0.0.0", KernelVersion: "fake", OSImage: "fake-kubelet",
		}
	}
	if len(node.Status.Capacity) == 0 {
		status["capacity"] = fk.capacity
	}
	if len(node.Status.Allocatable) == 0 {
		if len(node.Status.Capacity) == 0 {
			status["allocatable"] = fk.capacity
		} else {
			status["allocatable"] = node.Status.Capacity
		}
	}
	patch, err := json.Marshal(map[string]interface{}{"status": status})
	if err != nil {
		return err
	}
	_, err = fk.client.CoreV1().Nodes().Patch(ctx, node.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: "fake-kubelet"}, "status")
	return err
}

func (fk *fakeKubelet) renewLease(ctx context.Context, node *corev1.Node) error {
	leases := fk.client.CoordinationV1().Leases(leaseNamespace)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, node.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		controller := true
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name:      node.Name,
				Namespace: leaseNamespace,
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: &controller,
				}},
			},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       &node.Name,
				LeaseDurationSeconds: &fk.leaseSecs,
				RenewTime:            &now,
			},
		}, metav1.CreateOptions{FieldManager: "fake-kubelet"})
		if apierrors.IsAlreadyExists(err) {
			return errors.New("lease created concurrently")
		}
		return err
	} else if err != nil {
		return err
	}
	lease.Spec.HolderIdentity = &node.Name
	lease.Spec.LeaseDurationSeconds = &fk.leaseSecs
	lease.Spec.RenewTime = &now
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{FieldManager: "fake-kubelet"})
	return err
}

// syncPod starts a bound Pending pod or finishes the graceful deletion of a bound pod.
func (fk *fakeKubelet) syncPod(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := fk.pods.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		return nil
	}
	if pod.DeletionTimestamp != nil {
		if wait := time.Until(fk.deletionDue(pod)); wait > 0 {
			fk.podQueue.AddAfter(key, wait)
			return nil
		}
		zero := int64(0)
		uid := pod.UID
		err := fk.client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero,
			Preconditions:      &metav1.Preconditions{UID: &uid},
		})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil // already gone, or a new pod of the same name
		}
		if err == nil {
			klog.InfoS("pod deleted", "pod", key, "node", pod.Spec.NodeName)
		}
		return err
	}
	if pod.Status.Phase == corev1.PodRunning {
		return fk.becomeReady(ctx, pod)
	}
	if pod.Status.Phase != corev1.PodPending && pod.Status.Phase != "" {
		return nil
	}
	delay := fk.startDelay
	if v, ok := pod.Annotations[startDelayAnnotation]; ok {
		if d, err := time.ParseDuration(v); err == nil {
			delay = d
		} else {
			klog.InfoS("ignoring bad annotation", "pod", key, "annotation", startDelayAnnotation, "value", v)
		}
	}
	if wait := time.Until(pod.CreationTimestamp.Add(delay)); wait > 0 {
		fk.podQueue.AddAfter(key, wait)
		return nil
	}
	return fk.startPod(ctx, pod)
}

// deletionDue is when a terminating pod's containers are taken to have stopped: the start of
// its graceful deletion (its deletionTimestamp minus its grace period, as the API server set
// them) plus the grace period times --grace-scale.
func (fk *fakeKubelet) deletionDue(pod *corev1.Pod) time.Time {
	grace := int64(0)
	if pod.DeletionGracePeriodSeconds != nil {
		grace = *pod.DeletionGracePeriodSeconds
	}
	if grace <= 0 || fk.graceScale == 0 {
		return time.Time{}
	}
	full := time.Duration(grace) * time.Second
	started := pod.DeletionTimestamp.Add(-full)
	return started.Add(time.Duration(float64(full) * fk.graceScale))
}

// becomeReady marks a pod the fake kubelet started not Ready (for --ready-delay) Ready once
// that delay has passed since it started. Pods whose readiness anyone else set are left alone.
func (fk *fakeKubelet) becomeReady(ctx context.Context, pod *corev1.Pod) error {
	if fk.readyDelay == 0 || pod.Annotations[readyAnnotation] == "false" || !waitingForReadyDelay(&pod.Status) {
		return nil
	}
	started := pod.CreationTimestamp.Time
	if pod.Status.StartTime != nil {
		started = pod.Status.StartTime.Time
	}
	if wait := time.Until(started.Add(fk.readyDelay)); wait > 0 {
		fk.podQueue.AddAfter(cache.MetaObjectToName(pod).String(), wait)
		return nil
	}
	now := metav1.NewTime(time.Now())
	pod = pod.DeepCopy()
	for _, t := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
		setPodCondition(&pod.Status, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	for i := range pod.Status.ContainerStatuses {
		pod.Status.ContainerStatuses[i].Ready = true
	}
	_, err := fk.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{FieldManager: "fake-kubelet"})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or changed since: the update event queues it again
	}
	if err == nil {
		klog.InfoS("pod ready", "pod", klog.KObj(pod), "node", pod.Spec.NodeName)
	}
	return err
}

const readyDelayMessage = "fake-kubelet: not ready until --ready-delay after start"

// waitingForReadyDelay says whether the pod's Ready condition is the one startPod set for
// --ready-delay.
func waitingForReadyDelay(status *corev1.PodStatus) bool {
	for _, c := range status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionFalse && c.Message == readyDelayMessage
		}
	}
	return false
}

func (fk *fakeKubelet) startPod(ctx context.Context, pod *corev1.Pod) error {
	now := metav1.NewTime(time.Now())
	pod = pod.DeepCopy()
	status := &pod.Status
	status.Phase = corev1.PodRunning
	if status.StartTime == nil {
		status.StartTime = &now
	}
	if status.PodIP == "" {
		ip := fk.allocatePodIP()
		status.PodIP = ip
		status.PodIPs = []corev1.PodIP{{IP: ip}}
	}
	if node, err := fk.nodes.Get(pod.Spec.NodeName); err == nil {
		for _, addr := range node.Status.Addresses {
			if addr.Type == corev1.NodeInternalIP {
				status.HostIP = addr.Address
				status.HostIPs = []corev1.HostIP{{IP: addr.Address}}
				break
			}
		}
	}
	ready := pod.Annotations[readyAnnotation] != "false" && fk.readyDelay == 0
	for _, t := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodReadyToStartContainers, corev1.PodInitialized} {
		setPodCondition(status, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	for _, t := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
		if ready {
			setPodCondition(status, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
		} else {
			message := "fake-kubelet: " + readyAnnotation + " is false"
			if pod.Annotations[readyAnnotation] != "false" {
				message = readyDelayMessage
			}
			setPodCondition(status, corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: message, LastTransitionTime: now})
		}
	}
	started := true
	status.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		status.InitContainerStatuses = append(status.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: fmt.Sprintf("fake://%s/%s", pod.UID, c.Name),
			Ready: true, Started: &started,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}},
		})
	}
	status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		status.ContainerStatuses = append(status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: fmt.Sprintf("fake://%s/%s", pod.UID, c.Name),
			Ready: ready, Started: &started,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	_, err := fk.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{FieldManager: "fake-kubelet"})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		klog.InfoS("pod running", "pod", klog.KObj(pod), "node", pod.Spec.NodeName, "podIP", status.PodIP, "ready", ready)
	}
	return err
}

func setPodCondition(status *corev1.PodStatus, cond corev1.PodCondition) {
	for i := range status.Conditions {
		if status.Conditions[i].Type == cond.Type {
			if status.Conditions[i].Status != cond.Status {
				status.Conditions[i] = cond
			}
			return
		}
	}
	status.Conditions = append(status.Conditions, cond)
}

// allocatePodIP hands out addresses of the /16 in turn (x.y.0.2 .. x.y.255.254), wrapping around.
func (fk *fakeKubelet) allocatePodIP() string {
	n := fk.nextPodIP.Add(1) - 1
	n %= 256 * 253
	ip := make(net.IP, 4)
	copy(ip, fk.podNetwork)
	ip[2] = byte(n / 253)
	ip[3] = byte(n%253 + 2)
	return ip.String()
}
