use super::convert::*;
use super::parallel;
use super::text::stream_json;
use super::*;
use crate::quantity::Quantity;
use crate::snapshot::shapes::Shapes;
use crate::snapshot::{
    ConditionStatus, ContainerState, DisruptionMode, GangKind, HostPort, PodStatusDetail, Qos,
    TaintEffect,
};
use crate::snapshot::{NodeId, PodId};
use std::sync::Arc;

const LIST_YAML: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: n1
    labels: {zone: a}
  spec:
    taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
  status:
    allocatable: {cpu: "4", memory: 8Gi, pods: "110", nvidia.com/gpu: "2"}
    conditions: [{type: Ready, status: "True"}]
    images:
    - {names: ["registry.example/app@sha256:ab", "registry.example/app:1"], sizeBytes: 52428800}
    - {names: [busybox], sizeBytes: null}
- apiVersion: v1
  kind: Pod
  metadata:
    name: web-1
    namespace: default
    uid: u1
    annotations:
      kubectl.kubernetes.io/last-applied-configuration: "{...}"
      descheduler.alpha.kubernetes.io/evict: ""
    ownerReferences: [{kind: ReplicaSet, name: web, uid: rs1, controller: true}]
    creationTimestamp: "2026-01-01T00:00:00Z"
  spec:
    nodeName: n1
    overhead: {cpu: 10m}
    initContainers:
    - name: init
      image: busybox
      resources: {requests: {cpu: "2"}}
    - name: sidecar
      image: envoy
      restartPolicy: Always
      resources: {requests: {cpu: 100m, memory: 64Mi}}
    containers:
    - name: app
      image: nginx
      resources:
        requests: {cpu: 500m, memory: 128Mi}
        limits: {cpu: "1", memory: 128Mi}
      ports: [{containerPort: 80, hostPort: 8080}]
    volumes: [{name: cache, emptyDir: {}}]
  status:
    phase: Running
    startTime: "2026-01-01T00:00:05Z"
"#;

#[test]
fn decodes_a_kubectl_list() {
    let snap = load_bytes("test.yaml", LIST_YAML.as_bytes()).unwrap();
    assert_eq!(snap.nodes.len(), 1);
    let n = &snap.nodes[0];
    assert!(n.ready);
    assert_eq!(n.allocatable.cpu, 4000);
    assert_eq!(n.allocatable.memory, 8 << 30);
    assert_eq!(n.allocatable.pods, 110);
    assert_eq!(n.allocatable.get("nvidia.com/gpu"), 2);
    assert_eq!(n.taints[0].effect, TaintEffect::NoSchedule);
    // every name of every image, with its size (ImageLocality)
    assert_eq!(n.image_size("registry.example/app:1"), Some(50 << 20));
    assert_eq!(
        n.image_size("registry.example/app@sha256:ab"),
        Some(50 << 20)
    );
    assert_eq!(n.image_size("busybox"), Some(0));
    assert_eq!(n.image_size("nginx"), None);
    let p = &snap.pods[0];
    // containers 500m + sidecar 100m = 600m; init peak max(2000+0, 100) = 2000; + 10m overhead
    assert_eq!(p.requests.cpu, 2010);
    assert_eq!(p.requests.memory, (128 + 64) << 20);
    assert_eq!(p.qos, Qos::Burstable);
    assert!(p.has_evict_annotation);
    assert!(!p.is_mirror);
    assert!(p.has_local_storage);
    assert_eq!(
        &*p.host_ports,
        [HostPort {
            port: 8080,
            protocol: 0
        }]
    );
    assert_eq!(p.created, 1767225600);
    assert_eq!(p.started, Some(1767225605));
    // No status reason, container statuses or conditions: nothing allocated for them.
    assert!(p.status.is_none());
    assert_eq!(p.status(), &PodStatusDetail::default());
    assert_eq!(snap.pod_node(PodId::new(0)), Some(NodeId::new(0)));
    assert_eq!(snap.node_requested(NodeId::new(0)).pods, 1);
    assert_eq!(snap.pods_of_owner("rs1"), &[PodId::new(0)]);
}

#[test]
fn the_annotations_of_evictions_in_background_are_read_by_every_reader() {
    // Upstream's EvictionsInBackground: set whatever their value (KubeVirt writes its own).
    let pod = |name: &str, annotations: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"vm","uid":"u-{name}","annotations":{{{annotations}}}}},"spec":{{"nodeName":"n1","containers":[{{"name":"c"}}]}},"status":{{"phase":"Running"}}}}"#
        )
    };
    let items = [
        r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"4","memory":"8Gi","pods":"110"}}}"#.to_string(),
        pod("both", r#""descheduler.alpha.kubernetes.io/request-evict-only":"","descheduler.alpha.kubernetes.io/eviction-in-progress":"kubevirt""#),
        pod("requested", r#""descheduler.alpha.kubernetes.io/request-evict-only":"true""#),
        pod("neither", r#""descheduler.alpha.kubernetes.io/eviction-in-progress-not":"x""#),
    ];
    let json = format!(
        r#"{{"apiVersion":"v1","kind":"List","items":[{}]}}"#,
        items.join(",")
    );
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let yaml = serde_saphyr::to_string(&value).unwrap();
    for snap in [
        load_bytes("s.json", json.as_bytes()).unwrap(),
        load_bytes("s.yaml", yaml.as_bytes()).unwrap(),
    ] {
        let flags = |snap: &crate::snapshot::ClusterSnapshot| -> Vec<(String, bool, bool)> {
            let mut f: Vec<_> = snap
                .pods
                .iter()
                .map(|p| {
                    (
                        p.name.to_string(),
                        p.has_request_evict_only_annotation,
                        p.has_eviction_in_progress_annotation,
                    )
                })
                .collect();
            f.sort();
            f
        };
        let want = [
            ("both".to_string(), true, true),
            ("neither".to_string(), false, false),
            ("requested".to_string(), true, false),
        ];
        assert_eq!(flags(&snap), want);
        // The writer keeps them: what the decision log keeps reads back the same.
        let mut written = Vec::new();
        crate::snapshot::encode::write_list(&snap, &mut written).unwrap();
        let again = load_bytes("w.json", &written).unwrap();
        assert_eq!(flags(&again), want);
    }
}

#[test]
fn json_and_multi_document_yaml_agree() {
    let yaml_snap = load_bytes("a.yaml", LIST_YAML.as_bytes()).unwrap();
    let value: serde_json::Value = serde_saphyr::from_str(LIST_YAML).unwrap();
    let json = serde_json::to_vec(&value).unwrap();
    let json_snap = load_bytes("a.json", &json).unwrap();
    assert_eq!(json_snap.pods[0].requests, yaml_snap.pods[0].requests);
    let items = value["items"].as_array().unwrap();
    let multi: String = items
        .iter()
        .map(|i| format!("---\n{}", serde_saphyr::to_string(i).unwrap()))
        .collect();
    let multi_snap = load_bytes("m.yaml", multi.as_bytes()).unwrap();
    assert_eq!(multi_snap.pods[0].requests, yaml_snap.pods[0].requests);
    assert_eq!(
        multi_snap.nodes[0].allocatable,
        yaml_snap.nodes[0].allocatable
    );
}

#[test]
fn bad_quantity_names_object_and_field() {
    let bad = LIST_YAML.replace("cpu: 500m", "cpu: lots");
    let err = load_bytes("c.yaml", bad.as_bytes())
        .unwrap_err()
        .to_string();
    assert!(err.contains("c.yaml"), "{err}");
    assert!(err.contains("Pod default/web-1"), "{err}");
    assert!(
        err.contains("spec.containers[0].resources.requests.cpu"),
        "{err}"
    );
    assert!(err.contains("\"lots\""), "{err}");
}

const STATUS_JSON: &str = r#"{"kind":"List","items":[
        {"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},
         "status":{"allocatable":{"cpu":"4"},"conditions":[{"type":"Ready","status":"True"}]}},
        {"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"d"},"spec":{"nodeName":"n"},
         "status":{"phase":"Failed","reason":"NodeAffinity",
           "conditions":[{"type":"Ready","status":"False","reason":"PodCompleted",
                          "lastTransitionTime":"2026-01-01T00:01:00Z"},
                         {"type":"PodScheduled","status":"True"},
                         {"type":"example.com/Gate","status":"True"}],
           "initContainerStatuses":[{"name":"i","restartCount":2,
              "state":{"terminated":{"reason":"Error","exitCode":3}}}],
           "containerStatuses":[{"name":"a","restartCount":7,
              "state":{"waiting":{"reason":"CrashLoopBackOff"}}},
              {"name":"b","restartCount":0,"state":{"running":{"startedAt":"2026-01-01T00:00:00Z"}}},
              {"name":"c","restartCount":1,"state":{}}],
           "ephemeralContainerStatuses":[{"name":"e","state":{"terminated":{"exitCode":0,"reason":""}}}]}}]}"#;

#[test]
fn a_pod_reads_what_it_has_the_same_of_as_the_pod_before_it_from_that_pod() {
    let pod = |name: &str, labels: &str, owner: &str, images: &str, selector: &str| {
        let containers: Vec<String> = images
            .split(',')
            .map(|i| format!(r#"{{"image":"{i}"}}"#))
            .collect();
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"a","labels":{{{labels}}},"ownerReferences":[{owner}]}},"spec":{{"nodeName":"n","nodeSelector":{{{selector}}},"containers":[{}]}}}}"#,
            containers.join(",")
        )
    };
    let rs = r#"{"kind":"ReplicaSet","name":"web","uid":"u1","controller":true}"#;
    let sorted = r#""app":"web","tier":"a""#;
    let ssd = r#""disk":"ssd""#;
    let json = format!(
        r#"{{"kind":"List","items":[{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"n"}}}},{}]}}"#,
        [
            pod("p0", sorted, rs, "log:2,web:1", ssd),
            pod("p1", sorted, rs, "log:2,web:1", ssd),
            // Keys out of order.
            pod("p2", r#""tier":"a","app":"web""#, rs, "log:2,web:1", ssd),
            pod("p3", r#""app":"web","tier":"a""#, rs, "web:1,log:2", ssd),
            // Not a controller; another value; another selector; one image.
            pod(
                "p4",
                sorted,
                &rs.replace("true", "false"),
                "log:2,web:1",
                ssd
            ),
            pod(
                "p5",
                r#""app":"web","tier":"b""#,
                rs,
                "web:1",
                r#""disk":"ssd","x":"y""#
            ),
            pod("p6", sorted, rs, "web:1", ""),
        ]
        .join(",")
    );
    let snap = load_bytes("s.json", json.as_bytes()).unwrap();
    let p = |i: usize| &snap.pods[i];
    let labels = |i: usize| p(i).labels.iter().collect::<Vec<_>>();
    let images = |i: usize| p(i).images.iter().map(|i| &**i).collect::<Vec<_>>();
    for i in 0..4 {
        assert_eq!(labels(i), [("app", "web"), ("tier", "a")], "p{i}");
        assert_eq!(images(i), ["log:2", "web:1"], "p{i}");
        assert_eq!(
            p(i).node_selector.iter().collect::<Vec<_>>(),
            [("disk", "ssd")]
        );
        assert!(p(i).owners[0].controller, "p{i}");
    }
    assert!(Arc::ptr_eq(&p(0).owners, &p(1).owners));
    assert!(Arc::ptr_eq(&p(0).images, &p(3).images));
    assert!(!p(4).owners[0].controller);
    assert_eq!(labels(4), labels(0));
    assert_eq!(labels(5), [("app", "web"), ("tier", "b")]);
    assert_eq!(images(5), ["web:1"]);
    assert_eq!(p(5).node_selector.get("x"), Some("y"));
    assert_eq!(labels(6), labels(0));
    assert!(p(6).node_selector.is_empty());
    assert!(p(6).owners[0].controller);
}

#[test]
fn pods_of_one_workload_share_their_owners_images_and_template() {
    const TEMPLATE: &str = r#""nodeSelector":{"disk":"ssd"},
            "tolerations":[{"key":"gpu","operator":"Exists","effect":"NoSchedule"}],
            "affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
              {"labelSelector":{"matchLabels":{"app":"web"}},"topologyKey":"zone"}]}},
            "topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone",
              "whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"web"}}}]"#;
    let pod = |name: &str, owner_uid: &str, template: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"a","labels":{{"app":"web"}},"ownerReferences":[{{"kind":"ReplicaSet","name":"web","uid":"{owner_uid}","controller":true}}]}},"spec":{{"nodeName":"n","containers":[{{"image":"web:1"}},{{"image":"log:2"}}],{template}}}}}"#
        )
    };
    // Same shape (namespace, owner kind and name, images), another owner UID and
    // another template: a second toleration, skew, selector and anti-affinity key.
    let other = TEMPLATE
        .replace(
            r#""effect":"NoSchedule"}"#,
            r#""effect":"NoSchedule"},{"key":"b","operator":"Exists"}"#,
        )
        .replace(r#""maxSkew":1"#, r#""maxSkew":2"#)
        .replace(r#""disk":"ssd""#, r#""disk":"hdd""#)
        .replace(r#""topologyKey":"zone"}]}}"#, r#""topologyKey":"host"}]}}"#);
    let json = format!(
        r#"{{"kind":"List","items":[{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"n"}}}},{},{},{}]}}"#,
        pod("p0", "u1", TEMPLATE),
        pod("p1", "u1", TEMPLATE),
        pod("p2", "u2", &other),
    );
    let snap = load_bytes("s.json", json.as_bytes()).unwrap();
    let p = |i: usize| &snap.pods[i];
    let affinity = |i: usize| p(i).affinity.clone().unwrap();
    assert_eq!(p(0).shape, p(2).shape);
    assert!(Arc::ptr_eq(&p(0).owners, &p(1).owners));
    assert!(!Arc::ptr_eq(&p(0).owners, &p(2).owners));
    assert_eq!(&*p(2).owners[0].uid, "u2");
    assert!(Arc::ptr_eq(&p(0).images, &p(2).images));
    assert_eq!(&*p(1).images, ["log:2".into(), "web:1".into()]);
    assert!(Arc::ptr_eq(&p(0).tolerations, &p(1).tolerations));
    assert!(Arc::ptr_eq(&p(0).topology_spread, &p(1).topology_spread));
    assert!(Arc::ptr_eq(&affinity(0), &affinity(1)));
    assert_eq!(p(1).node_selector.get("disk"), Some("ssd"));
    // The other template keeps its own, as decoded.
    assert_eq!(p(2).tolerations.len(), 2);
    assert_eq!(p(2).topology_spread[0].max_skew, 2);
    assert_eq!(p(2).node_selector.get("disk"), Some("hdd"));
    assert_eq!(
        &*affinity(2).pod_anti_affinity_required[0].topology_key,
        "host"
    );
    assert_eq!(p(1).tolerations, p(0).tolerations);
    assert_ne!(p(2).tolerations, p(0).tolerations);
}

#[test]
fn decodes_pod_status_detail() {
    let snap = load_bytes("s.json", STATUS_JSON.as_bytes()).unwrap();
    assert!(snap.pods[0].status.is_some());
    let st = snap.pods[0].status();
    assert_eq!(st.reason.as_deref(), Some("NodeAffinity"));
    assert_eq!(st.containers.len(), 3);
    assert_eq!(st.containers[0].restart_count, 7);
    assert_eq!(st.containers[0].waiting_reason(), Some("CrashLoopBackOff"));
    assert_eq!(st.containers[1].state, ContainerState::Running);
    assert_eq!(st.containers[2].state, ContainerState::Unknown);
    assert_eq!(st.init_containers[0].restart_count, 2);
    assert_eq!(st.init_containers[0].terminated_reason(), Some("Error"));
    assert_eq!(st.init_containers[0].exit_code(), Some(3));
    assert_eq!(st.ephemeral_containers[0].terminated_reason(), None);
    assert_eq!(st.ephemeral_containers[0].exit_code(), Some(0));
    assert_eq!(st.conditions.len(), 3);
    assert_eq!(&*st.conditions[0].kind, "Ready");
    assert_eq!(&*st.conditions[1].kind, "PodScheduled");
    // Well-known types are shared, others kept as written.
    assert!(matches!(
        st.conditions[1].kind,
        std::borrow::Cow::Borrowed(_)
    ));
    assert_eq!(&*st.conditions[2].kind, "example.com/Gate");
    assert_eq!(st.conditions[0].status, ConditionStatus::False);
    assert_eq!(st.conditions[0].reason.as_deref(), Some("PodCompleted"));
    assert_eq!(st.conditions[0].last_transition, Some(1_767_225_660));
    assert_eq!(st.conditions[1].last_transition, None);
}

#[test]
fn bad_pod_condition_names_the_field() {
    let bad = STATUS_JSON.replace(r#""status":"False""#, r#""status":"Maybe""#);
    let err = load_bytes("s.json", bad.as_bytes())
        .unwrap_err()
        .to_string();
    assert!(err.contains("Pod d/p"), "{err}");
    assert!(err.contains("status.conditions[0].status"), "{err}");
    assert!(err.contains("True, False, Unknown"), "{err}");
    let bad = STATUS_JSON.replace("2026-01-01T00:01:00Z", "yesterday");
    let err = load_bytes("s.json", bad.as_bytes())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("status.conditions[0].lastTransitionTime"),
        "{err}"
    );
}

/// Decodes on one thread, for comparing with the two-thread path.
fn sequential(file: &str, bytes: &[u8]) -> SnapshotParts {
    let mut parts = SnapshotParts::default();
    let mut sink = Sink {
        file,
        parts: &mut parts,
        shapes: Shapes::default(),
        error: None,
        defaults: None,
    };
    let text = std::str::from_utf8(bytes).unwrap();
    stream_json(&mut sink, serde_json::Deserializer::from_str(text), false).unwrap();
    parts
}

fn fingerprint(p: &SnapshotParts) -> Vec<String> {
    let mut v: Vec<String> = p.nodes.iter().map(|n| format!("{n:?}")).collect();
    v.extend(p.pods.iter().map(|x| format!("{x:?}")));
    v.extend(p.pdbs.iter().map(|x| format!("{x:?}")));
    v.extend(p.namespaces.iter().map(|x| format!("{x:?}")));
    v.extend(p.priority_classes.iter().map(|x| format!("{x:?}")));
    v.extend(p.pod_groups.iter().map(|x| format!("{x:?}")));
    v.push(format!("{:?}", p.workloads));
    v
}

/// The integer fields the wire shapes read.
pub(super) const INT_KEYS: &[&str] = &[
    "priority",
    "restartCount",
    "exitCode",
    "hostPort",
    "weight",
    "maxSkew",
    "minDomains",
    "disruptionsAllowed",
    "value",
    "generation",
    "observedGeneration",
    "replicas",
    "updatedReplicas",
    "availableReplicas",
];

/// `text` with one to three bytes removed, inserted or replaced (and with `cut`, maybe
/// cut short) at random; None when that is not UTF-8.
pub(super) fn mutated(
    rng: &mut crate::snapshot::synthetic::Rng,
    text: &str,
    cut: bool,
) -> Option<String> {
    const BYTES: &[u8] = b"\"\\,:{}[]n0-.e+ \n\tx1\x01";
    let mut b = text.as_bytes().to_vec();
    for _ in 0..1 + rng.below(3) {
        let at = rng.below(b.len());
        match rng.below(if cut { 4 } else { 3 }) {
            0 => {
                b.remove(at);
            }
            1 => b.insert(at, *rng.pick(BYTES)),
            2 => b[at] = *rng.pick(BYTES),
            _ => b.truncate(at),
        }
        if b.is_empty() {
            break;
        }
    }
    String::from_utf8(b).ok()
}

/// A list read by both readers of a JSON list: the sequential one (serde), and the two
/// threads' (the hand-written reader, serde where it has a doubt), as `load_file` runs
/// them. The two threads' give up on any doubt (None); when they do not, both must read
/// the same objects, or give the same error.
fn both_readers_agree(text: &str) -> bool {
    let one = decode_parts("s.json", text.as_bytes());
    let (mut parts, mut more) = (SnapshotParts::default(), Vec::new());
    let two = parallel::decode_list_in_pieces(
        "s.json",
        text.as_bytes(),
        &mut parts,
        &mut more,
        4096,
        parallel::SPLIT,
    );
    let two = match two {
        None => return false,
        Some(result) => result.and_then(|()| checked("s.json", parts, &more)),
    };
    match (two, one) {
        (Ok(mut two), Ok((one, _))) => {
            two.pods.append(&mut more);
            assert_eq!(fingerprint(&two), fingerprint(&one), "{text}");
        }
        (Err(two), Err(one)) => assert_eq!(two.to_string(), one.to_string()),
        (two, one) => panic!(
            "two threads: {:?}; one: {:?}; {text}",
            two.map(|_| ()),
            one.map(|_| ())
        ),
    }
    true
}

/// Both readers of a JSON list on lists mutated as a file can be (issue 17: `-0` in an
/// integer field, a second `items`, no `kind`, another kind with `items`), and at random
/// (a seeded generator: `DESCHEDULER_DIFF_ITERATIONS` runs more than the default).
#[test]
fn both_readers_of_a_list_agree_on_mutated_lists() {
    use crate::snapshot::synthetic::{generate_json, Config, Rng};
    let base = String::from_utf8(generate_json(&Config::new(8, 200, 5))).unwrap();
    let envelope = base.rfind("\"kind\":\"List\"").unwrap();
    let mut texts = vec![
        base.clone(),
        base.replacen("\"items\":[", "\"items\":[],\"items\":[", 1),
        format!("{}\"items\":[],{}", &base[..envelope], &base[envelope..]),
        format!("{}{}", &base[..envelope - 1], &base[envelope + 13..]),
        format!(
            "{}\"kind\":\"Pod\"{}",
            &base[..envelope],
            &base[envelope + 13..]
        ),
    ];
    for key in INT_KEYS {
        let field = format!("\"{key}\":");
        // The last one: in the second thread's half.
        if let Some(at) = base.rfind(&field) {
            let at = at + field.len();
            texts.push(format!("{}-0,\"y\":{}", &base[..at], &base[at..]));
        }
    }
    assert!(texts.len() >= 10, "the generated list has integer fields");
    let iterations = iterations("DESCHEDULER_DIFF_ITERATIONS", 60);
    let mut rng = Rng::new(17);
    for _ in 0..iterations {
        texts.extend(mutated(&mut rng, &base, false));
    }
    let read_by_two = texts.iter().filter(|t| both_readers_agree(t)).count();
    // The unmutated list, and many of the mutated ones, take the two threads' path.
    assert!(both_readers_agree(&base));
    assert!(
        read_by_two > texts.len() / 4,
        "{read_by_two} of {}",
        texts.len()
    );
}

/// Iterations of a seeded harness: the number in env `var`, or `default`.
fn iterations(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A file the repository ships (policies, examples), by its path from the repository's top.
fn shipped(path: &str) -> String {
    let top = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read_to_string(top.join(path)).unwrap()
}

/// The shipped snapshots and policies, mutated by a seeded generator (bytes removed,
/// inserted, replaced, the text cut short): the snapshots through both readers of a JSON
/// list and through the YAML reader, and planned when they decode; the policies loaded and
/// built. Nothing panics, and both JSON readers agree. A few hundred inputs here; set
/// `DESCHEDULER_FUZZ_ITERATIONS` (per input file) for more.
#[test]
fn mutated_shipped_inputs_never_panic_and_both_readers_agree() {
    use crate::snapshot::synthetic::Rng;
    let iterations = iterations("DESCHEDULER_FUZZ_ITERATIONS", 30);
    let mut rng = Rng::new(2026);
    let policies: Vec<String> = [
        "policies/combined.yaml",
        "policies/lifecycle.yaml",
        "policies/lownodeutilization.yaml",
        "examples/batch/policy.yaml",
        "examples/usage/policy.yaml",
    ]
    .into_iter()
    .map(shipped)
    .collect();
    let pipeline = descheduler_planner::framework::Pipeline::build(
        &descheduler_planner::policy::Policy::from_yaml(
            "combined.yaml",
            &policies[0],
            &descheduler_planner::plugins::REGISTRY,
        )
        .unwrap(),
        "combined.yaml",
        &descheduler_planner::plugins::REGISTRY,
    )
    .unwrap();
    for text in &policies {
        for _ in 0..iterations {
            let Some(text) = mutated(&mut rng, text, true) else {
                continue;
            };
            if let Ok(policy) = descheduler_planner::policy::Policy::from_yaml(
                "p.yaml",
                &text,
                &descheduler_planner::plugins::REGISTRY,
            ) {
                let _ = descheduler_planner::framework::Pipeline::build(
                    &policy,
                    "p.yaml",
                    &descheduler_planner::plugins::REGISTRY,
                );
            }
        }
    }
    let mut agreed = 0;
    for path in [
        "examples/cluster-hotspot.yaml",
        "examples/batch/cluster.yaml",
        "examples/usage/cluster.json",
    ] {
        let text = shipped(path);
        // As a JSON list with enough items for the two threads' reader (64 chunks).
        let value: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
        let items = value["items"].as_array().unwrap();
        let copies = 200 / items.len() + 1;
        let many: Vec<&serde_json::Value> = std::iter::repeat_n(items, copies).flatten().collect();
        let json = serde_json::to_string(&serde_json::json!({
            "apiVersion": "v1", "items": many, "kind": "List", "metadata": {}
        }))
        .unwrap();
        assert!(
            both_readers_agree(&json),
            "{path}: the two threads' reader applies"
        );
        for _ in 0..iterations {
            if let Some(json) = mutated(&mut rng, &json, true) {
                agreed += usize::from(both_readers_agree(&json));
            }
            if let Some(text) = mutated(&mut rng, &text, true) {
                if let Ok(snap) = load_bytes(path, text.as_bytes()) {
                    let _ = descheduler_planner::plan::plan(&pipeline, &snap, 1_796_083_200);
                }
            }
        }
    }
    assert!(agreed > 0, "no mutated list went through both readers");
}

#[test]
fn two_threads_decode_exactly_what_one_does() {
    let cfg = crate::snapshot::synthetic::Config::new(100, 5000, 7);
    let bytes = crate::snapshot::synthetic::generate_json(&cfg);
    assert!(bytes.len() > parallel::MIN_BYTES, "{} bytes", bytes.len());
    let (mut fast, mut more) = (SnapshotParts::default(), Vec::new());
    parallel::decode_list("s.json", &bytes[..], &mut fast, &mut more)
        .expect("the two-thread path applies")
        .unwrap();
    // The second thread's pods are kept apart, and follow the first's.
    assert!(!fast.pods.is_empty() && !more.is_empty());
    fast.pods.append(&mut more);
    let slow = sequential("s.json", &bytes);
    assert_eq!(fast.pods.len(), 5000);
    assert_eq!(fingerprint(&fast), fingerprint(&slow));
}

#[test]
fn a_file_decoded_as_it_is_read_is_the_file() {
    // Multi-byte characters in every pod, so that reads end inside characters, and
    // pieces far smaller than one object, so that every object outgrows its window.
    let cfg = crate::snapshot::synthetic::Config::new(100, 5000, 7);
    let text = String::from_utf8(crate::snapshot::synthetic::generate_json(&cfg)).unwrap();
    let text = text.replace(r#""pod-template-hash":""#, r#""pod-template-hash":"é€"#);
    assert!(text.matches('€').count() > 1000);
    let bytes = text.into_bytes();
    let slow = sequential("s.json", &bytes);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.json");
    std::fs::write(&path, &bytes).unwrap();
    let source = parallel::FileSource {
        file: std::fs::File::open(&path).unwrap(),
        size: bytes.len(),
    };
    // The second thread's run from the middle, and from either end, so that one thread
    // is done with its own run long before the other and takes chunks from its end.
    let (mid, last) = (parallel::SPLIT, parallel::CHUNKS - 1);
    for (piece, split) in [
        (7, mid),
        (4096, mid),
        (1 << 20, mid),
        (4096, 1),
        (4096, last),
    ] {
        let (mut fast, mut more) = (SnapshotParts::default(), Vec::new());
        parallel::decode_list_in_pieces("s.json", &source, &mut fast, &mut more, piece, split)
            .expect("the two-thread path applies")
            .unwrap();
        let case = format!("pieces of {piece}, second run from chunk {split}");
        // (The first chunk holds only nodes: with the second run from chunk 1, every pod
        // is the second thread's, and they are all in `fast.pods`.)
        assert!(!more.is_empty() || split == 1, "{case}");
        fast.pods.append(&mut more);
        assert_eq!(fingerprint(&fast), fingerprint(&slow), "{case}");
    }
    // And through the file loader, which also indexes.
    let snap = load_file(&path).unwrap();
    assert_eq!(snap.pods.len(), 5000);
    assert_eq!(
        snap.pods
            .iter()
            .map(|p| format!("{p:?}"))
            .collect::<Vec<_>>(),
        slow.pods
            .iter()
            .map(|p| format!("{p:?}"))
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_large_file_that_is_not_a_list_or_not_text_is_read_whole() {
    let cfg = crate::snapshot::synthetic::Config::new(100, 5000, 7);
    let text = String::from_utf8(crate::snapshot::synthetic::generate_json(&cfg)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A top-level array of the same objects: decoded by the sequential path.
    let items = &text[text.find('[').unwrap()..text.rfind(']').unwrap() + 1];
    let path = dir.path().join("array.json");
    std::fs::write(&path, items).unwrap();
    assert_eq!(load_file(&path).unwrap().pods.len(), 5000);
    // A byte that is not UTF-8 in the middle: whatever the sequential decoder makes of it.
    let mut bytes = text.into_bytes();
    let mid = bytes.len() / 2;
    let at = mid
        + bytes[mid..]
            .windows(8)
            .position(|w| w == b"\"name\":\"")
            .unwrap()
        + 8;
    bytes[at] = 0xFF;
    let path = dir.path().join("binary.json");
    std::fs::write(&path, &bytes).unwrap();
    let file = path.display().to_string();
    let outcome = |r: Result<ClusterSnapshot, SnapshotError>| {
        r.map(|s| format!("{:?}", s.pods))
            .map_err(|e| e.to_string())
    };
    assert_eq!(
        outcome(load_file(&path)),
        outcome(load_bytes(&file, &bytes))
    );
    assert!(load_file(&dir.path().join("missing.json")).is_err());
}

#[test]
fn two_threads_fall_back_on_doubt_and_errors_stay_precise() {
    let cfg = crate::snapshot::synthetic::Config::new(100, 5000, 7);
    let bytes = crate::snapshot::synthetic::generate_json(&cfg);
    let text = std::str::from_utf8(&bytes).unwrap();
    // A bad quantity in the second half: the precise error of the sequential decoder.
    let at = text.len() * 3 / 4;
    let pos = at + text[at..].find("\"cpu\":\"").unwrap() + 7;
    let end = pos + text[pos..].find('"').unwrap();
    let mut broken = text.to_string();
    broken.replace_range(pos..end, "lots");
    let err = load_bytes("b.json", broken.as_bytes())
        .unwrap_err()
        .to_string();
    assert!(err.contains("b.json") && err.contains("\"lots\""), "{err}");
    let (mut none, mut more) = (SnapshotParts::default(), Vec::new());
    assert!(parallel::decode_list("b.json", broken.as_bytes(), &mut none, &mut more).is_none());
    assert!(none.pods.is_empty() && more.is_empty());
    // Truncated: a syntax error, not a partial snapshot.
    let cut = &text[..text.len() - 10];
    assert!(matches!(
        load_bytes("t.json", cut.as_bytes()),
        Err(SnapshotError::Syntax { .. })
    ));
    // Trailing garbage after the list.
    let trailing = format!("{text} x");
    assert!(load_bytes("g.json", trailing.as_bytes()).is_err());
}

#[test]
fn json_type_error_names_path() {
    let json = br#"{"kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},"spec":{"unschedulable":"yes"}}]}"#;
    let err = load_bytes("x.json", json).unwrap_err().to_string();
    assert!(err.contains("items[0].spec.unschedulable"), "{err}");
}

#[test]
fn no_nodes_is_an_error() {
    let json = br#"{"kind":"List","items":[]}"#;
    assert!(matches!(
        load_bytes("e.json", json),
        Err(SnapshotError::NoNodes { .. })
    ));
    assert!(matches!(
        load_bytes("e.json", b"  "),
        Err(SnapshotError::Syntax { .. })
    ));
    assert!(matches!(
        load_bytes("e.yaml", b"kind: [unclosed"),
        Err(SnapshotError::Syntax { .. })
    ));
}

#[test]
fn missing_kind_is_an_error() {
    let json = br#"{"kind":"List","items":[{"metadata":{"name":"x"}}]}"#;
    let err = load_bytes("k.json", json).unwrap_err().to_string();
    assert!(err.contains("kind"), "{err}");
}

#[test]
fn fast_timestamps_agree_with_rfc3339() {
    for t in [
        "1970-01-01T00:00:00Z",
        "2000-02-29T23:59:59Z",
        "2026-01-01T00:00:00Z",
        "2026-12-31T12:34:56Z",
        "2100-03-01T00:00:01Z",
        "1969-12-31T23:59:59Z",
    ] {
        let want = chrono::DateTime::parse_from_rfc3339(t).unwrap().timestamp();
        assert_eq!(utc_seconds(t), Some(want), "{t}");
    }
    // Everything else goes to the general parser.
    for t in [
        "2026-02-29T00:00:00Z",
        "2026-01-01T00:00:00.5Z",
        "2026-01-01T01:00:00+01:00",
        "2026-01-01t00:00:00z",
        "2026-13-01T00:00:00Z",
    ] {
        assert_eq!(utc_seconds(t), None, "{t}");
    }
    let obj = Obj {
        kind: "Pod",
        namespace: "ns",
        name: "p",
    };
    assert_eq!(
        timestamp("f", obj, "x", "2026-01-01T01:00:00+01:00").unwrap(),
        1_767_225_600
    );
    assert!(timestamp("f", obj, "x", "2026-02-29T00:00:00Z").is_err());
}

fn node_json(name: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}]
        }
    })
}

#[test]
fn escaped_strings_decode_to_their_values() {
    // Strings with escapes cannot be borrowed from the input; they must still decode.
    let json = br#"{"kind":"List","items":[
            {"apiVersion":"v1","kind":"Node","metadata":{"name":"n\u0031","labels":{"zone":"a\"b"}},
             "status":{"allocatable":{"cpu":"4"},"conditions":[{"type":"Ready","status":"True"}]}},
            {"apiVersion":"v1","kind":"Pod","metadata":{"name":"web\/1","namespace":"default","labels":{"app":"\u00e9t\u00e9"}},
             "spec":{"nodeName":"n1","containers":[{"image":"nginx","resources":{"requests":{"cpu":"100m"}}}]},
             "status":{"phase":"Running"}}
        ]}"#;
    let snap = load_bytes("e.json", json).unwrap();
    assert_eq!(&*snap.nodes[0].name, "n1");
    assert_eq!(snap.nodes[0].labels.get("zone"), Some("a\"b"));
    let pod = &snap.pods[0];
    assert_eq!(&*pod.name, "web/1");
    assert_eq!(pod.labels.get("app"), Some("été"));
    assert_eq!(snap.pod_node(PodId::new(0)), Some(NodeId::new(0)));
    assert_eq!(pod.requests.cpu, 100);
}

#[test]
fn top_level_array_and_single_object() {
    let array = serde_json::to_vec(&serde_json::json!([node_json("a"), node_json("b")])).unwrap();
    let snap = load_bytes("a.json", &array).unwrap();
    assert_eq!(snap.nodes.len(), 2);
    let one = serde_json::to_vec(&node_json("solo")).unwrap();
    let snap = load_bytes("o.json", &one).unwrap();
    assert_eq!(&*snap.nodes[0].name, "solo");
    // Nested lists are read too.
    let nested = serde_json::to_vec(&serde_json::json!({
        "kind": "List",
        "items": [{"kind": "NodeList", "items": [node_json("x")]}, node_json("y")]
    }))
    .unwrap();
    assert_eq!(load_bytes("n.json", &nested).unwrap().nodes.len(), 2);
}

#[test]
fn json_list_errors_name_the_object() {
    let mut pod = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": "default"},
        "spec": {"containers": [{"image": "x", "resources": {"limits": {"memory": "lots"}}}]}
    });
    let list = |items: Vec<serde_json::Value>| {
        serde_json::to_vec(&serde_json::json!({"kind": "List", "items": items})).unwrap()
    };
    let err = load_bytes("l.json", &list(vec![node_json("n"), pod.clone()]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("l.json"), "{err}");
    assert!(err.contains("Pod default/web-1"), "{err}");
    assert!(
        err.contains("spec.containers[0].resources.limits.memory"),
        "{err}"
    );
    // A type error later in a list still gives its path.
    pod["spec"] = serde_json::json!({"priority": "high"});
    let err = load_bytes("l.json", &list(vec![node_json("n"), pod]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("items[1].spec.priority"), "{err}");
    // Trailing garbage and invalid UTF-8 are syntax errors.
    let mut bytes = list(vec![node_json("n")]);
    bytes.extend_from_slice(b" x");
    assert!(matches!(
        load_bytes("t.json", &bytes),
        Err(SnapshotError::Syntax { .. })
    ));
    let mut bytes = list(vec![node_json("n")]);
    let at = bytes.len() - 3;
    bytes.splice(at..at, *b"\xff");
    assert!(matches!(
        load_bytes("u.json", &bytes),
        Err(SnapshotError::Syntax { .. })
    ));
}

/// A key given twice in a map (labels, a node selector, resources) is refused in JSON
/// as in YAML (a file kubectl prints never has one), naming where it is.
#[test]
fn duplicate_map_keys_are_refused_in_json_and_yaml() {
    let json = br#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n","labels":{"a":"1","b":"2","a":"3"}},
            "status":{"allocatable":{"cpu":"1"}}}"#;
    let e = load_bytes("d.json", json).unwrap_err().to_string();
    assert!(
        e.contains("metadata.labels") && e.contains(r#"the key "a" is given twice"#),
        "{e}"
    );
    let yaml = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels: {a: '1', b: '2', a: '3'}\nstatus: {allocatable: {cpu: '1'}}\n";
    let e = load_bytes("d.yaml", yaml.as_bytes())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("line 5") && e.contains("a key given twice"),
        "{e}"
    );
    assert!(
        !e.contains("Options"),
        "the reader's settings are not the user's: {e}"
    );
    // The hand-written reader of large lists gives the same error (where it reads the
    // list at all).
    let list = format!(
        r#"{{"kind":"List","apiVersion":"v1","items":[{}]}}"#,
        std::str::from_utf8(json).unwrap()
    );
    both_readers_agree(&list);
}

/// `null` for a list, a map, a string, a number or an object reads as the empty one, as
/// the API's Go decoder reads it (and as policies read it), in JSON and YAML, by both
/// readers of a JSON list.
#[test]
fn nulls_read_as_empty_in_json_and_yaml() {
    let node = |extra: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"n1"{extra}}},"spec":{{"unschedulable":false{extra2}}},
                "status":{{"allocatable":{{"cpu":"4","pods":"110"}},"conditions":[{{"type":"Ready","status":"True"}}]{extra3}}}}}"#,
            extra2 = extra.replace("labels", "taints"),
            extra3 = extra.replace("labels", "capacity"),
        )
    };
    let pod = |nulls: bool| {
        let n = |field: &str| {
            if nulls {
                format!(r#","{field}":null"#)
            } else {
                String::new()
            }
        };
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"p","namespace":"default"{}{}{}}},
                "spec":{{"nodeName":"n1"{}{}{}{},"containers":[{{"name":"c","image":"x"{}{}}}]}},
                "status":{{"phase":"Running"{}{}{}}}}}"#,
            n("labels"),
            n("ownerReferences"),
            n("uid"),
            n("tolerations"),
            n("volumes"),
            n("nodeSelector"),
            n("topologySpreadConstraints"),
            n("ports"),
            n("resources"),
            n("conditions"),
            n("containerStatuses"),
            n("reason"),
        )
    };
    let list = |nulls: bool| {
        let extra = if nulls { r#","labels":null"# } else { "" };
        format!(
            r#"{{"kind":"List","apiVersion":"v1","items":[{},{}]}}"#,
            node(extra),
            pod(nulls)
        )
    };
    let (with, without) = (list(true), list(false));
    let (a, _) = decode_parts("n.json", with.as_bytes()).unwrap();
    let (b, _) = decode_parts("n.json", without.as_bytes()).unwrap();
    assert_eq!(fingerprint(&a), fingerprint(&b));
    both_readers_agree(&with);
    // YAML: `~` and `null`.
    let yaml = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: n1, labels: ~}\n  spec: {taints: null}\n  status:\n    allocatable: {cpu: '4', pods: '110'}\n    conditions: [{type: Ready, status: 'True'}]\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p, namespace: default, labels: ~, ownerReferences: ~, uid: ~}\n  spec:\n    nodeName: n1\n    tolerations: ~\n    volumes: null\n    nodeSelector: ~\n    topologySpreadConstraints: ~\n    containers: [{name: c, image: x, ports: ~, resources: ~}]\n  status: {phase: Running, conditions: ~, containerStatuses: ~, reason: ~}\n";
    let (c, _) = decode_parts("n.yaml", yaml.as_bytes()).unwrap();
    assert_eq!(fingerprint(&c), fingerprint(&b));
}

/// A YAML value of the wrong type names its field, as JSON's do.
#[test]
fn yaml_type_errors_name_the_field() {
    let yaml = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: n1}\n  status: {allocatable: {cpu: '4'}}\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p, namespace: default}\n  spec: {nodeName: n1, priority: high}\n";
    let e = load_bytes("t.yaml", yaml.as_bytes())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("line 11") && e.contains("at items[1].spec.priority"),
        "{e}"
    );
    let docs = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec: {containers: {name: c}}\n";
    let e = load_bytes("t.yaml", docs.as_bytes())
        .unwrap_err()
        .to_string();
    assert!(e.contains("document 2, at spec.containers"), "{e}");
}

const GANGS_YAML: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
  status:
    allocatable: {cpu: "4"}
    conditions: [{type: Ready, status: "True"}]
- apiVersion: scheduling.x-k8s.io/v1alpha1
  kind: PodGroup
  metadata: {name: train, namespace: ml}
  spec: {minMember: 3, scheduleTimeoutSeconds: 60}
- apiVersion: scheduling.volcano.sh/v1beta1
  kind: PodGroup
  metadata: {name: sim, namespace: ml}
  spec: {queue: default}
  status: {phase: Running, running: 2}
- apiVersion: scheduling.volcano.sh/v1beta1
  kind: PodGroup
  metadata: {name: zero, namespace: ml}
  spec: {minMember: 0}
- apiVersion: scheduling.example.com/v1
  kind: PodGroup
  metadata: {name: other, namespace: ml}
  spec: {minMember: true}
- apiVersion: v1
  kind: Pod
  metadata:
    name: train-0
    namespace: ml
    labels: {scheduling.x-k8s.io/pod-group: train}
  spec: {nodeName: n1}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata:
    name: sim-0
    namespace: ml
    annotations: {scheduling.k8s.io/group-name: sim}
  spec: {nodeName: n1}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata:
    name: lost-0
    namespace: ml
    annotations: {scheduling.k8s.io/group-name: lost}
  spec: {nodeName: n1}
  status: {phase: Running}
"#;

#[test]
fn decodes_pod_groups_of_both_kinds() {
    let snap = load_bytes("g.yaml", GANGS_YAML.as_bytes()).unwrap();
    // the PodGroup of an unknown API group is ignored, like other unknown kinds
    assert_eq!(snap.pod_groups.len(), 3);
    let train = snap
        .gang_id(GangKind::SchedulerPlugins, "ml", "train")
        .unwrap();
    let g = snap.gang(train);
    assert_eq!(g.min_member, Some(3));
    assert_eq!(g.running, 1);
    let tp = snap.pod_id("ml", "train-0").unwrap();
    assert_eq!(snap.gangs_of_pod(tp), &[train]);
    assert_eq!(g.members, vec![tp]);
    // minMember absent (or 0): 1
    let sim = snap.gang_id(GangKind::Volcano, "ml", "sim").unwrap();
    assert_eq!(snap.gang(sim).min_member, Some(1));
    let zero = snap.gang_id(GangKind::Volcano, "ml", "zero").unwrap();
    assert_eq!(snap.gang(zero).min_member, Some(1));
    let sp = snap.pod_id("ml", "sim-0").unwrap();
    assert_eq!(snap.pod(sp).volcano_group.as_deref(), Some("sim"));
    assert_eq!(snap.gangs_of_pod(sp), &[sim]);
    // a group no PodGroup object describes: unknown minMember
    let lost = snap.gang_id(GangKind::Volcano, "ml", "lost").unwrap();
    assert_eq!(snap.gang(lost).min_member, None);
    assert_eq!(snap.gang(lost).members.len(), 1);
    // the same in JSON
    let value: serde_json::Value = serde_saphyr::from_str(GANGS_YAML).unwrap();
    let json = serde_json::to_vec(&value).unwrap();
    let j = load_bytes("g.json", &json).unwrap();
    assert_eq!(j.gangs, snap.gangs);
    assert_eq!(j.pod_groups, snap.pod_groups);
}

/// Kubernetes' own PodGroups (`scheduling.k8s.io`, 1.37), as the API server writes them:
/// the gang size in `spec.schedulingPolicy.gang.minCount`, the disruption mode a union.
const K8S_GANGS_YAML: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
  status:
    allocatable: {cpu: "4"}
    conditions: [{type: Ready, status: "True"}]
- apiVersion: scheduling.k8s.io/v1beta1
  kind: PodGroup
  metadata: {name: train, namespace: ml}
  spec:
    schedulingPolicy: {gang: {minCount: 4}}
    disruptionMode: {all: {}}
    workloadRef: {workloadName: job, templateName: workers}
  status: {conditions: [{type: PodGroupInitiallyScheduled, status: "True"}]}
- apiVersion: scheduling.k8s.io/v1alpha3
  kind: PodGroup
  metadata: {name: serve, namespace: ml}
  spec:
    schedulingPolicy: {gang: {minCount: 2}}
    disruptionMode: {single: {}}
- apiVersion: scheduling.k8s.io/v1beta1
  kind: PodGroup
  metadata: {name: loose, namespace: ml}
  spec:
    schedulingPolicy: {basic: {}}
- apiVersion: scheduling.k8s.io/v1beta1
  kind: PodGroup
  metadata: {name: nulls, namespace: ml}
  spec: {schedulingPolicy: null, disruptionMode: null}
- apiVersion: v1
  kind: Pod
  metadata: {name: train-0, namespace: ml}
  spec: {nodeName: n1, schedulingGroup: {podGroupName: train}}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata: {name: serve-0, namespace: ml}
  spec: {nodeName: n1, schedulingGroup: {podGroupName: serve}}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata: {name: gone-0, namespace: ml}
  spec: {nodeName: n1, schedulingGroup: {podGroupName: gone}}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata:
    name: both-0
    namespace: ml
    labels: {scheduling.x-k8s.io/pod-group: train}
  spec: {nodeName: n1, schedulingGroup: {podGroupName: train}}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata: {name: none-0, namespace: ml}
  spec: {nodeName: n1, schedulingGroup: {podGroupName: null}}
  status: {phase: Running}
"#;

/// Kubernetes 1.36 writes `scheduling.k8s.io/v1alpha2` PodGroups: the disruption mode a
/// string (`Pod`, `PodGroup`), the template reference `podGroupTemplateRef`.
#[test]
fn decodes_kubernetes_1_36_pod_groups() {
    let doc = |mode: &str| {
        format!(
            r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {{name: n1}}
  status: {{allocatable: {{cpu: "4"}}}}
- apiVersion: scheduling.k8s.io/v1alpha2
  kind: PodGroup
  metadata: {{name: train, namespace: ml}}
  spec:
    schedulingPolicy: {{gang: {{minCount: 3}}}}
    podGroupTemplateRef: {{workload: {{workloadName: job, podGroupTemplateName: workers}}}}
    {mode}
- apiVersion: v1
  kind: Pod
  metadata: {{name: train-0, namespace: ml}}
  spec: {{nodeName: n1, schedulingGroup: {{podGroupName: train}}}}
  status: {{phase: Running}}
"#
        )
    };
    let read = |mode: &str| load_bytes("k.yaml", doc(mode).as_bytes());
    for (mode, want) in [
        ("disruptionMode: PodGroup", Some(DisruptionMode::All)),
        ("disruptionMode: Pod", Some(DisruptionMode::Single)),
        ("disruptionMode: \"\"", None),
        ("", None),
    ] {
        let snap = read(mode).unwrap_or_else(|e| panic!("{mode}: {e}"));
        let g = snap.gang(snap.gang_id(GangKind::Kubernetes, "ml", "train").unwrap());
        assert_eq!((g.min_member, g.disruption), (Some(3), want), "{mode}");
        assert_eq!(g.members.len(), 1, "{mode}");
    }
    // The same from JSON, through the fast reader.
    let json = r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"4"}}},{"apiVersion":"scheduling.k8s.io/v1alpha2","kind":"PodGroup","metadata":{"name":"train","namespace":"ml"},"spec":{"schedulingPolicy":{"gang":{"minCount":2}},"disruptionMode":"PodGroup"}}]}"#;
    let snap = load_bytes("k.json", json.as_bytes()).unwrap();
    let g = snap.gang(snap.gang_id(GangKind::Kubernetes, "ml", "train").unwrap());
    assert_eq!(
        (g.min_member, g.disruption),
        (Some(2), Some(DisruptionMode::All))
    );
    // A mode no version has: named, with the ones there are.
    let err = read("disruptionMode: Whole").unwrap_err().to_string();
    assert!(
        err.contains("spec.disruptionMode")
            && err.contains("\"Whole\" is not a disruption mode")
            && err.contains("Pod")
            && err.contains("PodGroup"),
        "{err}"
    );
    // Neither a string nor a map: a clear type error, not a panic.
    let err = read("disruptionMode: [Pod]").unwrap_err().to_string();
    assert!(err.contains("disruption mode"), "{err}");
}

/// What live mode reads from a Kubernetes 1.36 API server (which serves PodGroups only as
/// `scheduling.k8s.io/v1alpha2`): its typed list (items without their type) and its watch
/// events, the disruption mode a string and the template reference `podGroupTemplateRef`.
#[test]
fn a_kubernetes_1_36_servers_pod_group_list_and_watch_events_are_read() {
    use super::stream::{decode_event, EventType, ListDecoder, Object, ObjectType};
    let v1alpha2 = ObjectType {
        kind: "PodGroup",
        api_version: "scheduling.k8s.io/v1alpha2",
    };
    let item = |name: &str, rv: &str, mode: &str| {
        format!(
            r#"{{"metadata":{{"name":"{name}","namespace":"ml","uid":"u-{name}","resourceVersion":"{rv}"}},"spec":{{"podGroupTemplateRef":{{"workload":{{"workloadName":"job","podGroupTemplateName":"workers"}}}},"schedulingPolicy":{{"gang":{{"minCount":3}}}},"disruptionMode":"{mode}"}},"status":{{"conditions":[]}}}}"#
        )
    };
    let list = format!(
        r#"{{"kind":"PodGroupList","apiVersion":"scheduling.k8s.io/v1alpha2","metadata":{{"resourceVersion":"17"}},"items":[{},{}]}}"#,
        item("train", "15", "PodGroup"),
        item("serve", "16", "Pod")
    );
    let mut decoder = ListDecoder::new("the API's podgroups list", v1alpha2);
    decoder.push(list.as_bytes()).unwrap();
    let listed = decoder.finish().unwrap();
    assert_eq!(listed.resource_version, "17");
    let modes: Vec<(&str, i32, Option<DisruptionMode>)> = listed
        .parts
        .pod_groups
        .iter()
        .map(|g| (&*g.name, g.min_member, g.disruption))
        .collect();
    assert_eq!(
        modes,
        [
            ("train", 3, Some(DisruptionMode::All)),
            ("serve", 3, Some(DisruptionMode::Single))
        ]
    );
    assert!(listed
        .parts
        .pod_groups
        .iter()
        .all(|g| g.kind == GangKind::Kubernetes));
    // A watch event: the mode changed to Pod.
    let line = format!(
        r#"{{"type":"MODIFIED","object":{}}}"#,
        item("train", "18", "Pod")
    );
    let event = decode_event("the podgroups watch", v1alpha2, &line).unwrap();
    assert_eq!(event.kind, EventType::Modified);
    assert_eq!(event.resource_version, "18");
    match event.object {
        Some(Object::PodGroup(g)) => {
            assert_eq!(
                (&*g.name, g.min_member, g.disruption),
                ("train", 3, Some(DisruptionMode::Single))
            );
        }
        other => panic!("not a PodGroup: {other:?}"),
    }
    // A mode 1.36 does not write is refused, named, in the watch as in files.
    let line = format!(
        r#"{{"type":"ADDED","object":{}}}"#,
        item("bad", "19", "Whole")
    );
    let err = decode_event("the podgroups watch", v1alpha2, &line)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("disruptionMode") && err.contains("\"Whole\" is not a disruption mode"),
        "{err}"
    );
}

#[test]
fn decodes_kubernetes_pod_groups() {
    let snap = load_bytes("k.yaml", K8S_GANGS_YAML.as_bytes()).unwrap();
    assert_eq!(snap.pod_groups.len(), 4);
    let gang = |name: &str| snap.gang(snap.gang_id(GangKind::Kubernetes, "ml", name).unwrap());
    let train = gang("train");
    assert_eq!(train.min_member, Some(4));
    assert_eq!(train.disruption, Some(DisruptionMode::All));
    assert_eq!(train.describe(), "PodGroup ml/train (scheduling.k8s.io)");
    assert!(train.goes_whole(false), "all: whole, whatever the policy");
    // v1alpha3 reads as v1beta1
    let serve = gang("serve");
    assert_eq!(serve.min_member, Some(2));
    assert_eq!(serve.disruption, Some(DisruptionMode::Single));
    assert!(
        !serve.goes_whole(true),
        "single: one by one, whatever the policy"
    );
    // no gang policy: no minimum beyond 1; no disruption mode: the policy's
    for name in ["loose", "nulls"] {
        let g = gang(name);
        assert_eq!((g.min_member, g.disruption), (Some(1), None), "{name}");
        assert!(g.goes_whole(true) && !g.goes_whole(false), "{name}");
    }
    let t0 = snap.pod_id("ml", "train-0").unwrap();
    assert_eq!(snap.pod(t0).pod_group.as_deref(), Some("train"));
    assert_eq!(train.members.len(), 2);
    assert_eq!(train.running, 2);
    assert_eq!(snap.gangs_of_pod(t0).len(), 1);
    // a pod naming a group of each of two kinds is in both
    let both = snap.pod_id("ml", "both-0").unwrap();
    let kinds: Vec<GangKind> = snap
        .gangs_of_pod(both)
        .iter()
        .map(|&g| snap.gang(g).kind)
        .collect();
    assert_eq!(kinds, [GangKind::SchedulerPlugins, GangKind::Kubernetes]);
    assert!(snap.goes_whole(both, false));
    assert_eq!(snap.whole_rule(both), "disruptionMode all");
    // a group whose PodGroup was not read: unknown minCount, every member protected
    let gone = gang("gone");
    assert_eq!(gone.min_member, None);
    assert_eq!(gone.members.len(), 1);
    let none = snap.pod_id("ml", "none-0").unwrap();
    assert!(snap.gangs_of_pod(none).is_empty());
    // the same in JSON, by both JSON readers
    let value: serde_json::Value = serde_saphyr::from_str(K8S_GANGS_YAML).unwrap();
    let json = serde_json::to_vec(&value).unwrap();
    let j = load_bytes("k.json", &json).unwrap();
    assert_eq!(j.gangs, snap.gangs);
    assert_eq!(j.pod_groups, snap.pod_groups);
    both_readers_agree(std::str::from_utf8(&json).unwrap());
    // and as the snapshot writer writes them
    let mut out = Vec::new();
    crate::snapshot::encode::write_list(&snap, &mut out).unwrap();
    let again = load_bytes("again.json", &out).unwrap();
    assert_eq!(again.gangs, snap.gangs);
    assert_eq!(again.pod_groups, snap.pod_groups);
}

#[test]
fn bad_kubernetes_pod_groups_name_the_field() {
    let cases = [
        ("minCount: 4}", "minCount: -1}", "-1 is negative"),
        ("minCount: 4}", "minCount: four}", "the string \"four\""),
        (
            "{all: {}}",
            "{all: {}, single: {}}",
            "sets both single and all",
        ),
    ];
    for (from, to, found) in cases {
        let yaml = K8S_GANGS_YAML.replacen(from, to, 1);
        let err = load_bytes("k.yaml", yaml.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.contains("PodGroup ml/train"), "{err}");
        assert!(err.contains(found), "{err}");
        let field = if found.contains("both") {
            "spec.disruptionMode"
        } else {
            "spec.schedulingPolicy.gang.minCount"
        };
        assert!(err.contains(field), "{err}");
        let value: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
        let json = serde_json::to_vec(&value).unwrap();
        let err = load_bytes("k.json", &json).unwrap_err().to_string();
        assert!(err.contains(field), "{err}");
        both_readers_agree(std::str::from_utf8(&json).unwrap());
    }
}

#[test]
fn bad_min_member_names_the_field() {
    for (bad, found) in [
        ("minMember: 3,", "the string \"three\""),
        ("minMember: 3,", "-2 is negative"),
        ("minMember: 3,", "the number 2.5"),
    ] {
        let value = if found.contains("string") {
            "minMember: three,"
        } else if found.contains("negative") {
            "minMember: -2,"
        } else {
            "minMember: 2.5,"
        };
        let yaml = GANGS_YAML.replace(bad, value);
        let err = load_bytes("g.yaml", yaml.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.contains("PodGroup ml/train"), "{err}");
        assert!(err.contains("spec.minMember"), "{err}");
        assert!(err.contains(found), "{err}");
        let value: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
        let json = serde_json::to_vec(&value).unwrap();
        let err = load_bytes("g.json", &json).unwrap_err().to_string();
        assert!(err.contains("spec.minMember"), "{err}");
    }
    let yaml = GANGS_YAML.replace(
        "- apiVersion: scheduling.x-k8s.io/v1alpha1\n  kind: PodGroup",
        "- kind: PodGroup",
    );
    let err = load_bytes("g.yaml", yaml.as_bytes())
        .unwrap_err()
        .to_string();
    assert!(err.contains("PodGroup ml/train"), "{err}");
    assert!(err.contains("apiVersion"), "{err}");
}

#[test]
fn fast_quantities_agree_with_the_parser() {
    for q in [
        "0",
        "1",
        "4",
        "110",
        "250m",
        "1500m",
        "0m",
        "007",
        "512Mi",
        "16Gi",
        "1Ti",
        "64Ki",
        "2k",
        "3M",
        "5G",
        "123456789012345",
        "1.5",
        "100e3",
        "-1",
        "1Pi",
        "1Ei",
        "",
        "m",
        "12x",
        "1234567890123456",
    ] {
        assert_eq!(parse_quantity(q), Quantity::parse(q), "{q:?}");
    }
}

const PROTECTED_PODS_YAML: &str = r#"
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: "4"}}}
- apiVersion: v1
  kind: Pod
  metadata:
    name: karpenter
    namespace: a
    annotations: {karpenter.sh/do-not-disrupt: "true"}
  spec: {nodeName: n1, containers: [{name: c}]}
- apiVersion: v1
  kind: Pod
  metadata:
    name: autoscaler
    namespace: a
    annotations: {cluster-autoscaler.kubernetes.io/safe-to-evict: "false"}
  spec: {nodeName: n1, containers: [{name: c}]}
- apiVersion: v1
  kind: Pod
  metadata:
    name: allowed
    namespace: a
    annotations: {karpenter.sh/do-not-disrupt: "false", cluster-autoscaler.kubernetes.io/safe-to-evict: "true"}
  spec: {nodeName: n1, containers: [{name: c}]}
- apiVersion: v1
  kind: Pod
  metadata:
    name: until
    namespace: a
    annotations: {descheduler.alpha.kubernetes.io/do-not-evict-until: "2026-12-31T18:00:00+01:00"}
  spec: {nodeName: n1, containers: [{name: c}]}
- apiVersion: v1
  kind: Pod
  metadata:
    name: unreadable
    namespace: a
    annotations: {descheduler.alpha.kubernetes.io/do-not-evict-until: "tomorrow"}
  spec: {nodeName: n1, containers: [{name: c}]}
"#;

#[test]
fn reads_the_protections_users_write_on_pods() {
    use crate::snapshot::{DoNotDisrupt, PROTECTED_UNTIL_UNREADABLE};
    let check = |snap: &ClusterSnapshot| {
        let pod = |name: &str| snap.pod(snap.pod_id("a", name).unwrap());
        assert_eq!(
            pod("karpenter").do_not_disrupt,
            Some(DoNotDisrupt::Karpenter)
        );
        assert_eq!(
            pod("autoscaler").do_not_disrupt,
            Some(DoNotDisrupt::ClusterAutoscaler)
        );
        assert_eq!(pod("allowed").do_not_disrupt, None);
        assert_eq!(pod("allowed").protected_until, None);
        // 2026-12-31T17:00:00Z
        assert_eq!(pod("until").protected_until, Some(1_798_736_400));
        assert_eq!(
            pod("unreadable").protected_until,
            Some(PROTECTED_UNTIL_UNREADABLE)
        );
    };
    let snap = load_bytes("p.yaml", PROTECTED_PODS_YAML.as_bytes()).unwrap();
    check(&snap);
    // By both JSON readers.
    let value: serde_json::Value = serde_saphyr::from_str(PROTECTED_PODS_YAML).unwrap();
    let json = serde_json::to_vec(&value).unwrap();
    check(&load_bytes("p.json", &json).unwrap());
    both_readers_agree(std::str::from_utf8(&json).unwrap());
    // As the snapshot writer writes them back.
    let mut out = Vec::new();
    crate::snapshot::encode::write_list(&snap, &mut out).unwrap();
    check(&load_bytes("again.json", &out).unwrap());
}

/// What `kubectl get deploy,hpa,resourcequota,nodes -A -o yaml` prints (trimmed).
pub(super) const WORKLOADS_YAML: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: web
    namespace: app
    uid: d-web
    generation: 4
    annotations:
      deployment.kubernetes.io/revision: "2"
      descheduler.alpha.kubernetes.io/surge-in-flight: '{"replicas":3,"victim":"u1","pod":"web-1","deadline":1800000000}'
  spec:
    replicas: 3
    paused: true
    selector: {matchLabels: {app: web}}
    strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%, maxUnavailable: 25%}}
    template:
      metadata: {labels: {app: web}}
      spec: {containers: [{name: c, image: nginx, resources: {requests: {cpu: 100m}}}]}
  status:
    observedGeneration: 3
    replicas: 4
    updatedReplicas: 2
    readyReplicas: 3
    availableReplicas: 3
    conditions:
    - {type: Available, status: "True", reason: MinimumReplicasAvailable, lastUpdateTime: "2026-01-01T00:00:00Z", lastTransitionTime: "2026-01-01T00:00:00Z"}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: api, namespace: app, uid: d-api}
  spec:
    selector: {matchLabels: {app: api}}
    template: {metadata: {labels: {app: api}}, spec: {containers: [{name: c, image: api}]}}
  status: {}
- apiVersion: autoscaling/v2
  kind: HorizontalPodAutoscaler
  metadata: {name: web, namespace: app}
  spec:
    scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
    minReplicas: 2
    maxReplicas: 10
    metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]
  status: {currentReplicas: 3, desiredReplicas: 3, conditions: [{type: AbleToScale, status: "True"}]}
- apiVersion: autoscaling/v1
  kind: HorizontalPodAutoscaler
  metadata: {name: old, namespace: app}
  spec: {scaleTargetRef: {kind: Deployment, name: api}, maxReplicas: 4, targetCPUUtilizationPercentage: 50}
- apiVersion: v1
  kind: ResourceQuota
  metadata: {name: compute, namespace: app}
  spec: {hard: {pods: "10", requests.cpu: "4", requests.memory: 8Gi}}
  status:
    hard: {requests.memory: 8Gi, pods: "10", requests.cpu: "4", limits.cpu: "8", count/deployments.apps: "5", requests.nvidia.com/gpu: "2"}
    used: {pods: "3", requests.cpu: 1500m, requests.memory: 3Gi, limits.cpu: "3", count/deployments.apps: "2", requests.nvidia.com/gpu: "0"}
- apiVersion: v1
  kind: ResourceQuota
  metadata: {name: fresh, namespace: other}
  spec: {hard: {pods: "1"}}
- apiVersion: example.com/v1
  kind: Deployment
  metadata: {name: not-apps, namespace: app}
  spec: {replicas: many}
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
  status: {allocatable: {cpu: "4"}, conditions: [{type: Ready, status: "True"}]}
"#;

/// The model of [`WORKLOADS_YAML`].
fn expected_workloads() -> crate::snapshot::Workloads {
    use crate::snapshot::{Autoscaler, Deployment, ResourceQuota, Workloads};
    let pairs = |v: &[(&str, i64)]| v.iter().map(|(n, x)| ((*n).into(), *x)).collect();
    Workloads {
        deployments: vec![
            Deployment {
                namespace: "app".into(),
                name: "api".into(),
                uid: "d-api".into(),
                replicas: 1,
                paused: false,
                generation: 0,
                observed_generation: 0,
                status_replicas: 0,
                updated_replicas: 0,
                available_replicas: 0,
                surge_in_flight: None,
            },
            Deployment {
                namespace: "app".into(),
                name: "web".into(),
                uid: "d-web".into(),
                replicas: 3,
                paused: true,
                generation: 4,
                observed_generation: 3,
                status_replicas: 4,
                updated_replicas: 2,
                available_replicas: 3,
                surge_in_flight: Some(
                    r#"{"replicas":3,"victim":"u1","pod":"web-1","deadline":1800000000}"#.into(),
                ),
            },
        ],
        autoscalers: vec![
            Autoscaler {
                namespace: "app".into(),
                name: "old".into(),
                target_kind: "Deployment".into(),
                target_name: "api".into(),
            },
            Autoscaler {
                namespace: "app".into(),
                name: "web".into(),
                target_kind: "Deployment".into(),
                target_name: "web".into(),
            },
        ],
        quotas: vec![
            ResourceQuota {
                namespace: "app".into(),
                name: "compute".into(),
                hard: pairs(&[
                    ("count/deployments.apps", 5),
                    ("limits.cpu", 8000),
                    ("pods", 10),
                    ("requests.cpu", 4000),
                    ("requests.memory", 8 << 30),
                    ("requests.nvidia.com/gpu", 2),
                ]),
                used: pairs(&[
                    ("count/deployments.apps", 2),
                    ("limits.cpu", 3000),
                    ("pods", 3),
                    ("requests.cpu", 1500),
                    ("requests.memory", 3 << 30),
                    ("requests.nvidia.com/gpu", 0),
                ]),
            },
            ResourceQuota {
                namespace: "other".into(),
                name: "fresh".into(),
                hard: vec![],
                used: vec![],
            },
        ],
    }
}

#[test]
fn deployments_autoscalers_and_quotas_are_read_from_a_list() {
    let snap = load_bytes("w.yaml", WORKLOADS_YAML.as_bytes()).unwrap();
    assert_eq!(snap.workloads, expected_workloads());
    // The same objects as JSON, through every reader of a JSON list.
    let value: serde_json::Value = serde_saphyr::from_str(WORKLOADS_YAML).unwrap();
    let json = serde_json::to_string(&value).unwrap();
    let snap = load_bytes("w.json", json.as_bytes()).unwrap();
    assert_eq!(snap.workloads, expected_workloads());
    assert!(both_readers_agree(&among_pods(&json)));
    // What a surge reads of them.
    let web = snap.workloads.deployment("app", "web").unwrap();
    assert!(web.rolling_out().unwrap().contains("generation 4"));
    assert_eq!(snap.workloads.autoscalers_of(web).count(), 1);
    assert_eq!(snap.workloads.quotas_in("app").count(), 1);
}

#[test]
fn typed_lists_of_each_kind_are_read() {
    // One typed list a kind, as `kubectl get deploy -o yaml` of one kind prints them.
    let value: serde_json::Value = serde_saphyr::from_str(WORKLOADS_YAML).unwrap();
    let items = value["items"].as_array().unwrap();
    let of = |kind: &str| -> Vec<serde_json::Value> {
        items
            .iter()
            .filter(|i| i["kind"] == kind && i["apiVersion"] != "example.com/v1")
            .cloned()
            .collect()
    };
    let list = |kind: &str, api_version: &str| {
        serde_json::json!({"apiVersion": api_version, "kind": format!("{kind}List"),
                           "metadata": {"resourceVersion": "9"}, "items": of(kind)})
    };
    let docs = [
        list("Node", "v1"),
        list("Deployment", "apps/v1"),
        list("HorizontalPodAutoscaler", "autoscaling/v2"),
        list("ResourceQuota", "v1"),
    ];
    let yaml: String = docs
        .iter()
        .map(|d| format!("---\n{}\n", serde_json::to_string(d).unwrap()))
        .collect();
    let snap = load_bytes("typed.yaml", yaml.as_bytes()).unwrap();
    assert_eq!(snap.workloads, expected_workloads());
    // The API's typed lists leave the items' kind out: read as the resource's type.
    use super::stream::{ListDecoder, ObjectType};
    let mut got = crate::snapshot::SnapshotParts::default();
    for (kind, api_version, path) in [
        ("Deployment", "apps/v1", "deployments"),
        (
            "HorizontalPodAutoscaler",
            "autoscaling/v2",
            "horizontalpodautoscalers",
        ),
        ("ResourceQuota", "v1", "resourcequotas"),
    ] {
        let mut list = list(kind, api_version);
        for item in list["items"].as_array_mut().unwrap() {
            let item = item.as_object_mut().unwrap();
            item.remove("kind");
            item.remove("apiVersion");
        }
        let object = ObjectType { kind, api_version };
        let mut decoder = ListDecoder::new(format!("the API's {path} list"), object);
        decoder
            .push(serde_json::to_string(&list).unwrap().as_bytes())
            .unwrap();
        let listed = decoder.finish().unwrap();
        assert_eq!(listed.resource_version, "9");
        join(&mut got, listed.parts);
    }
    got.workloads.sort();
    // The one object of another API group named Deployment is not among them.
    assert_eq!(got.workloads, expected_workloads());
}

#[test]
fn watch_events_of_workloads_decode_into_the_model() {
    use super::stream::{decode_event, EventType, Object, ObjectType};
    let deployment = ObjectType {
        kind: "Deployment",
        api_version: "apps/v1",
    };
    let line = r#"{"type":"MODIFIED","object":{"metadata":{"name":"web","namespace":"app","uid":"d1","generation":5,"resourceVersion":"31"},"spec":{"replicas":4},"status":{"observedGeneration":5,"replicas":4,"updatedReplicas":4,"availableReplicas":3}}}"#;
    let event = decode_event("the deployments watch", deployment, line).unwrap();
    assert_eq!(event.kind, EventType::Modified);
    assert_eq!(event.resource_version, "31");
    match event.object {
        Some(Object::Deployment(d)) => {
            assert_eq!((d.replicas, d.generation, d.available_replicas), (4, 5, 3));
        }
        other => panic!("not a Deployment: {other:?}"),
    }
    let hpa = ObjectType {
        kind: "HorizontalPodAutoscaler",
        api_version: "autoscaling/v2",
    };
    let line = r#"{"type":"DELETED","object":{"metadata":{"name":"web","namespace":"app","resourceVersion":"32"},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web"},"maxReplicas":3}}}"#;
    let event = decode_event("the horizontalpodautoscalers watch", hpa, line).unwrap();
    assert!(
        matches!(&event.object, Some(Object::Autoscaler(a)) if &*a.target_name == "web"),
        "{event:?}"
    );
    let quota = ObjectType {
        kind: "ResourceQuota",
        api_version: "v1",
    };
    let line = r#"{"type":"ADDED","object":{"metadata":{"name":"q","namespace":"app","resourceVersion":"33"},"status":{"hard":{"pods":"2","cpu":"1"},"used":{"pods":"1","cpu":"250m"}}}}"#;
    let event = decode_event("the resourcequotas watch", quota, line).unwrap();
    match event.object {
        Some(Object::ResourceQuota(q)) => {
            assert_eq!(q.hard, [("cpu".into(), 1000), ("pods".into(), 2)]);
            assert_eq!(q.used, [("cpu".into(), 250), ("pods".into(), 1)]);
        }
        other => panic!("not a ResourceQuota: {other:?}"),
    }
    // A bad value is refused, named, in a watch as in a file.
    let line = r#"{"type":"ADDED","object":{"metadata":{"name":"web","namespace":"app"},"spec":{"replicas":"2"}}}"#;
    let err = decode_event("the deployments watch", deployment, line)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Deployment app/web") && err.contains("spec.replicas"),
        "{err}"
    );
}

#[test]
fn bad_workload_values_name_the_object_and_the_field() {
    for (from, to, object, field, found) in [
        (
            "replicas: 3",
            "replicas: three",
            "Deployment app/web",
            "spec.replicas",
            "expected an integer, found the string \"three\"",
        ),
        (
            "replicas: 3",
            "replicas: -1",
            "Deployment app/web",
            "spec.replicas",
            "-1 is negative",
        ),
        (
            "replicas: 3",
            "replicas: 2.5",
            "Deployment app/web",
            "spec.replicas",
            "the number 2.5",
        ),
        (
            "replicas: 3",
            "replicas: 3000000000",
            "Deployment app/web",
            "spec.replicas",
            "does not fit an int32",
        ),
        (
            "updatedReplicas: 2",
            "updatedReplicas: two",
            "Deployment app/web",
            "status.updatedReplicas",
            "the string \"two\"",
        ),
        (
            "generation: 4",
            "generation: [4]",
            "Deployment app/web",
            "metadata.generation",
            "a list",
        ),
        (
            "requests.cpu: 1500m",
            "requests.cpu: lots",
            "ResourceQuota app/compute",
            "status.used.requests.cpu",
            "lots",
        ),
        (
            "pods: \"10\", requests.cpu: \"4\", limits",
            "pods: \"-1\", requests.cpu: \"4\", limits",
            "ResourceQuota app/compute",
            "status.hard.pods",
            "negative",
        ),
        (
            "scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}",
            "scaleTargetRef: {kind: Deployment}",
            "HorizontalPodAutoscaler app/web",
            "spec.scaleTargetRef.name",
            "missing",
        ),
        (
            "  spec: {scaleTargetRef: {kind: Deployment, name: api}, ",
            "  spec: {",
            "HorizontalPodAutoscaler app/old",
            "spec.scaleTargetRef",
            "missing",
        ),
        (
            "  metadata: {name: compute, namespace: app}",
            "  metadata: {namespace: app}",
            "ResourceQuota #4",
            "metadata.name",
            "missing",
        ),
    ] {
        assert!(WORKLOADS_YAML.contains(from), "{from}");
        let yaml = WORKLOADS_YAML.replacen(from, to, 1);
        let value: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
        let json = serde_json::to_string(&value).unwrap();
        for (file, bytes) in [("w.yaml", yaml.as_bytes()), ("w.json", json.as_bytes())] {
            let err = match load_bytes(file, bytes) {
                Ok(_) => panic!("{file} with {to:?} is read"),
                Err(e) => e.to_string(),
            };
            for want in [file, object, field, found] {
                assert!(err.contains(want), "{to}: {want} not in {err}");
            }
        }
        // Where the two threads' reader takes such a list on, it gives the same error.
        both_readers_agree(&among_pods(&json));
    }
}

/// The items of the JSON List `list` among a generated cluster's, large enough for the
/// two threads' reader of a list.
fn among_pods(list: &str) -> String {
    use crate::snapshot::synthetic::{generate_json, Config};
    let base = String::from_utf8(generate_json(&Config::new(8, 200, 5))).unwrap();
    let value: serde_json::Value = serde_json::from_str(list).unwrap();
    let items: Vec<String> = value["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.to_string())
        .collect();
    let at = base.find("\"items\":[").unwrap() + "\"items\":[".len();
    format!("{}{},{}", &base[..at], items.join(","), &base[at..])
}
