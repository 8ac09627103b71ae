#!/usr/bin/env bash
# End-to-end check of scripts/local-cluster with the built kubectl: three Nodes become Ready; a
# Deployment of 3 replicas with a PDB (minAvailable 2) is scheduled and Running; an eviction
# through the policy/v1 subresource succeeds, a second one right after is refused (429) while the
# replacement starts, the ReplicaSet controller's replacement is scheduled and Running, and the
# disruption controller's status.disruptionsAllowed comes back to 1; `down` leaves no process.
#
#   hack/control-plane/smoke-test.sh      (uses LOCAL_CLUSTER_DIR like scripts/local-cluster)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cluster="$repo/scripts/local-cluster"
work="$(mktemp -d)"
cleanup() {
  "$cluster" down || true
  rm -rf "$work"
}
trap cleanup EXIT

step() { echo "--- $*" >&2; }
fail() { echo "FAIL: $*" >&2; exit 1; }

kubeconfig="$("$cluster" up | tail -n 1)"
bin="$("$repo/scripts/build-control-plane" 2>/dev/null | tail -n 1)"
export KUBECONFIG="$kubeconfig"
k() { "$bin/kubectl" "$@"; }

step "nodes"
for i in 1 2 3; do
  cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: node-$i
  labels: {kubernetes.io/hostname: node-$i, topology.kubernetes.io/zone: zone-$i}
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
  addresses: [{type: InternalIP, address: 10.0.1.$i}]
EOF
done >"$work/nodes.yaml"
k create -f "$work/nodes.yaml"
k wait --for=condition=Ready node --all --timeout=60s
k get nodes -o wide

step "deployment and PDB"
# Each pod stays Pending 3s after creation, so the replacement of an evicted pod is not yet
# healthy when the second eviction comes.
k create -f - <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {fake-kubelet/start-delay: 3s}
    spec:
      containers:
      - name: web
        image: registry.invalid/web:1
        resources: {requests: {cpu: 500m, memory: 256Mi}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: default}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: web}}
EOF
k rollout status deployment/web --timeout=90s
k wait --for=jsonpath='{.status.disruptionsAllowed}'=1 pdb/web --timeout=60s
k get pods -o wide
k get pdb web

step "evict one pod"
mapfile -t pods < <(k get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
((${#pods[@]} == 3)) || fail "want 3 pods, have ${#pods[@]}"
evict() {
  printf '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"%s","namespace":"default"}}' "$1" >"$work/eviction.json"
  k create --raw "/api/v1/namespaces/default/pods/$1/eviction" -f "$work/eviction.json"
}
evict "${pods[0]}"
echo
step "a second eviction must be refused by the PDB"
if out="$(evict "${pods[1]}" 2>&1)"; then
  fail "second eviction was allowed: $out"
fi
echo "$out"
[[ "$out" == *"disruption budget"* ]] || fail "second eviction failed for another reason"

step "the evicted pod is gone and replaced"
k wait --for=delete "pod/${pods[0]}" --timeout=60s
k rollout status deployment/web --timeout=90s
k wait --for=condition=Ready pod -l app=web --timeout=60s
mapfile -t now < <(k get pods -l app=web --field-selector=status.phase=Running -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
((${#now[@]} == 3)) || fail "want 3 Running pods, have ${#now[@]}"
for p in "${now[@]}"; do
  [[ "$p" != "${pods[0]}" ]] || fail "evicted pod ${pods[0]} still there"
done
k get pods -o wide
k wait --for=jsonpath='{.status.disruptionsAllowed}'=1 pdb/web --timeout=60s
k get pdb web -o jsonpath='{.status}'
echo

step "down"
"$cluster" down
state="${LOCAL_CLUSTER_DIR:-$repo/.cache/local-cluster}"
state="$(cd "$state" && pwd)"
if "$cluster" status >/dev/null 2>&1; then
  fail "status says the cluster still runs"
fi
for f in /proc/[0-9]*/cmdline; do
  cmdline="$({ tr '\0' ' ' <"$f"; } 2>/dev/null || true)"
  if [[ "$cmdline" == *"$state/"* ]]; then
    fail "a process still runs with $state in its command line: $cmdline"
  fi
done
echo "smoke test passed"
