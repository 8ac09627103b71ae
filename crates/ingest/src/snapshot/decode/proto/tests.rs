use super::super::stream::ListDecoder;
use super::*;

/// A message written by hand, its fields in the order added.
#[derive(Default, Clone)]
struct M(Vec<u8>);

fn var(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

impl M {
    fn new() -> M {
        M::default()
    }
    fn int(mut self, n: u32, v: i64) -> M {
        var(u64::from(n) << 3, &mut self.0);
        var(v as u64, &mut self.0);
        self
    }
    fn bytes(mut self, n: u32, b: &[u8]) -> M {
        var(u64::from(n) << 3 | 2, &mut self.0);
        var(b.len() as u64, &mut self.0);
        self.0.extend_from_slice(b);
        self
    }
    fn s(self, n: u32, s: &str) -> M {
        self.bytes(n, s.as_bytes())
    }
    fn m(self, n: u32, m: M) -> M {
        self.bytes(n, &m.0)
    }
    /// A map<string, string> entry.
    fn kv(self, n: u32, k: &str, v: &str) -> M {
        self.m(n, M::new().s(1, k).s(2, v))
    }
    /// A map<string, Quantity> entry.
    fn kq(self, n: u32, k: &str, v: &str) -> M {
        self.m(n, M::new().s(1, k).m(2, M::new().s(1, v)))
    }
    /// A metav1.Time.
    fn t(self, n: u32, seconds: i64) -> M {
        self.m(n, M::new().int(1, seconds))
    }
}

/// A list response: the magic, the envelope, the list with `items`.
fn response(kind: &str, items: &[M]) -> Vec<u8> {
    let mut list = M::new().m(1, M::new().s(2, "42"));
    for i in items {
        list = list.m(2, i.clone());
    }
    let mut out = MAGIC.to_vec();
    let env = M::new()
        .m(1, M::new().s(1, "v1").s(2, kind))
        .m(2, list)
        .s(3, "")
        .s(4, "");
    out.extend_from_slice(&env.0);
    out
}

/// 2026-11-30T10:00:00Z.
const T0: i64 = 1_796_032_800;

fn rich_pod() -> M {
    let selector = |app: &str| M::new().kv(1, "app", app);
    let meta = M::new()
        .s(1, "web-1")
        .s(2, "web-")
        .s(3, "shop")
        .s(5, "u1")
        .s(6, "41")
        .t(8, T0)
        .kv(11, "app", "web")
        .kv(11, "tier", "front")
        .kv(12, "descheduler.alpha.kubernetes.io/evict", "true")
        .kv(12, "karpenter.sh/do-not-disrupt", "true")
        .kv(
            12,
            "descheduler.alpha.kubernetes.io/do-not-evict-until",
            "2026-12-31T17:00:00Z",
        )
        .kv(12, "descheduler.alpha.kubernetes.io/request-evict-only", "")
        .kv(
            12,
            "descheduler.alpha.kubernetes.io/eviction-in-progress",
            "kubevirt",
        )
        .kv(12, "other", "x")
        .m(
            13,
            M::new()
                .s(1, "ReplicaSet")
                .s(3, "web-abc")
                .s(4, "rs1")
                .s(5, "apps/v1")
                .int(6, 1),
        )
        // managedFields: passed over.
        .m(17, M::new().s(1, "kubectl").s(2, "Update"));
    let node_req = |k: &str, op: &str, vals: &[&str]| {
        vals.iter()
            .fold(M::new().s(1, k).s(2, op), |m, v| m.s(3, v))
    };
    let pod_term = |topology: &str| {
        M::new()
            .m(
                1,
                selector("web").m(2, M::new().s(1, "tier").s(2, "In").s(3, "front")),
            )
            .s(2, "shop")
            .s(3, topology)
            .m(4, M::new())
    };
    let affinity = M::new()
        .m(
            1,
            M::new()
                .m(
                    1,
                    M::new().m(
                        1,
                        M::new()
                            .m(1, node_req("k", "In", &["v1", "v2"]))
                            .m(2, node_req("metadata.name", "NotIn", &["n9"])),
                    ),
                )
                .m(
                    2,
                    M::new()
                        .int(1, 5)
                        .m(2, M::new().m(1, node_req("disk", "Exists", &[]))),
                ),
        )
        .m(2, M::new().m(1, pod_term("zone")))
        .m(
            3,
            M::new()
                .m(1, pod_term("kubernetes.io/hostname"))
                .m(2, M::new().int(1, 10).m(2, pod_term("zone"))),
        );
    let spec = M::new()
        .m(1, M::new().s(1, "a").m(2, M::new().m(2, M::new())))
        .m(
            1,
            M::new().s(1, "b").m(2, M::new().m(1, M::new().s(1, "/x"))),
        )
        .m(
            1,
            M::new()
                .s(1, "c")
                .m(2, M::new().m(10, M::new().s(1, "data"))),
        )
        .m(
            2,
            M::new()
                .s(1, "app")
                .s(2, "web:1")
                .s(3, "run")
                .m(
                    6,
                    M::new()
                        .s(1, "http")
                        .int(2, 8080)
                        .int(3, 80)
                        .s(4, "TCP")
                        .s(5, ""),
                )
                .m(6, M::new().int(2, 0).int(3, 9090).s(4, "UDP"))
                .m(
                    8,
                    M::new()
                        .kq(1, "memory", "2Gi")
                        .kq(2, "cpu", "500m")
                        .kq(2, "memory", "1Gi"),
                ),
        )
        .s(3, "Always")
        .int(4, 30)
        .kv(7, "zone", "a")
        .s(10, "n1")
        .m(18, affinity)
        .m(
            20,
            M::new()
                .s(1, "side")
                .s(2, "side:1")
                .m(8, M::new().kq(2, "cpu", "50m"))
                .s(24, "Always"),
        )
        .m(
            22,
            M::new()
                .s(1, "k")
                .s(2, "Equal")
                .s(3, "v")
                .s(4, "NoSchedule"),
        )
        .m(
            22,
            M::new()
                .s(1, "")
                .s(2, "Exists")
                .s(3, "")
                .s(4, "")
                .int(5, 300),
        )
        .s(24, "high")
        .int(25, 1000)
        .kq(32, "cpu", "10m")
        .m(
            33,
            M::new()
                .int(1, 1)
                .s(2, "zone")
                .s(3, "DoNotSchedule")
                .m(4, selector("web"))
                .int(5, 2)
                .s(6, "Honor")
                .s(7, "Ignore")
                .s(8, "pod-template-hash"),
        )
        .m(39, M::new().s(1, "gpu").s(3, "gpu-claim"))
        .m(40, M::new().kq(2, "cpu", "1"))
        .m(43, M::new().s(1, "train"));
    let status = M::new()
        .s(1, "Running")
        .m(
            2,
            M::new()
                .s(1, "Ready")
                .s(2, "True")
                .m(3, M::new())
                .t(4, T0 + 60)
                .s(5, "")
                .s(6, ""),
        )
        .m(
            2,
            M::new()
                .s(1, "PodScheduled")
                .s(2, "False")
                .m(4, M::new())
                .s(5, "Unschedulable"),
        )
        .s(4, "")
        .s(6, "10.0.0.1")
        .t(7, T0 + 5)
        .m(
            8,
            M::new()
                .s(1, "app")
                .m(
                    2,
                    M::new().m(1, M::new().s(1, "CrashLoopBackOff").s(2, "back-off")),
                )
                .m(3, M::new())
                .int(5, 3),
        )
        .m(
            10,
            M::new()
                .s(1, "side")
                .m(2, M::new().m(2, M::new().t(1, T0)))
                .int(5, 0),
        )
        .m(
            13,
            M::new()
                .s(1, "dbg")
                .m(2, M::new().m(3, M::new().int(1, 1).s(3, "Error")))
                .int(5, 0),
        );
    M::new().m(1, meta).m(2, spec).m(3, status)
}

const RICH_POD_JSON: &str = r#"{"metadata":{"name":"web-1","generateName":"web-","namespace":"shop","uid":"u1","resourceVersion":"41","creationTimestamp":"2026-11-30T10:00:00Z","labels":{"app":"web","tier":"front"},"annotations":{"descheduler.alpha.kubernetes.io/evict":"true","karpenter.sh/do-not-disrupt":"true","descheduler.alpha.kubernetes.io/do-not-evict-until":"2026-12-31T17:00:00Z","descheduler.alpha.kubernetes.io/request-evict-only":"","descheduler.alpha.kubernetes.io/eviction-in-progress":"kubevirt","other":"x"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-abc","uid":"rs1","controller":true}],"managedFields":[{"manager":"kubectl","operation":"Update"}]},
 "spec":{"volumes":[{"name":"a","emptyDir":{}},{"name":"b","hostPath":{"path":"/x"}},{"name":"c","persistentVolumeClaim":{"claimName":"data"}}],
  "containers":[{"name":"app","image":"web:1","command":["run"],"ports":[{"name":"http","hostPort":8080,"containerPort":80,"protocol":"TCP"},{"containerPort":9090,"protocol":"UDP"}],"resources":{"limits":{"memory":"2Gi"},"requests":{"cpu":"500m","memory":"1Gi"}}}],
  "restartPolicy":"Always","terminationGracePeriodSeconds":30,"nodeSelector":{"zone":"a"},"nodeName":"n1",
  "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"k","operator":"In","values":["v1","v2"]}],"matchFields":[{"key":"metadata.name","operator":"NotIn","values":["n9"]}]}]},"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":5,"preference":{"matchExpressions":[{"key":"disk","operator":"Exists"}]}}]},
   "podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier","operator":"In","values":["front"]}]},"namespaces":["shop"],"topologyKey":"zone","namespaceSelector":{}}]},
   "podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier","operator":"In","values":["front"]}]},"namespaces":["shop"],"topologyKey":"kubernetes.io/hostname","namespaceSelector":{}}],"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":10,"podAffinityTerm":{"labelSelector":{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier","operator":"In","values":["front"]}]},"namespaces":["shop"],"topologyKey":"zone","namespaceSelector":{}}}]}},
  "initContainers":[{"name":"side","image":"side:1","resources":{"requests":{"cpu":"50m"}},"restartPolicy":"Always"}],
  "tolerations":[{"key":"k","operator":"Equal","value":"v","effect":"NoSchedule"},{"operator":"Exists","tolerationSeconds":300}],
  "priorityClassName":"high","priority":1000,"overhead":{"cpu":"10m"},
  "topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"web"}},"minDomains":2,"nodeAffinityPolicy":"Honor","nodeTaintsPolicy":"Ignore","matchLabelKeys":["pod-template-hash"]}],
  "resourceClaims":[{"name":"gpu","resourceClaimName":"gpu-claim"}],"resources":{"requests":{"cpu":"1"}},"schedulingGroup":{"podGroupName":"train"}},
 "status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-30T10:01:00Z"},{"type":"PodScheduled","status":"False","lastTransitionTime":null,"reason":"Unschedulable"}],"podIP":"10.0.0.1","startTime":"2026-11-30T10:00:05Z",
  "containerStatuses":[{"name":"app","state":{"waiting":{"reason":"CrashLoopBackOff","message":"back-off"}},"lastState":{},"restartCount":3}],
  "initContainerStatuses":[{"name":"side","state":{"running":{"startedAt":"2026-11-30T10:00:00Z"}},"restartCount":0}],
  "ephemeralContainerStatuses":[{"name":"dbg","state":{"terminated":{"exitCode":1,"reason":"Error"}},"restartCount":0}]}}"#;

/// What the server writes for a pod with little set: empty strings, a zero host port
/// and unset times written where its JSON leaves them out.
fn bare_pod() -> M {
    M::new()
        .m(
            1,
            M::new()
                .s(1, "bare")
                .s(2, "")
                .s(3, "default")
                .s(5, "u2")
                .s(6, "7")
                .m(8, M::new()),
        )
        .m(
            2,
            M::new()
                .m(
                    2,
                    M::new()
                        .s(1, "c")
                        .s(2, "busybox")
                        .m(6, M::new().int(2, 0).int(3, 1).s(4, "TCP"))
                        .m(8, M::new()),
                )
                .s(10, "")
                .s(24, ""),
        )
        .m(3, M::new().s(1, "Pending").s(4, "").s(3, ""))
}

const BARE_POD_JSON: &str = r#"{"metadata":{"name":"bare","namespace":"default","uid":"u2","resourceVersion":"7","creationTimestamp":null},
 "spec":{"containers":[{"name":"c","image":"busybox","ports":[{"containerPort":1,"protocol":"TCP"}],"resources":{}}]},"status":{"phase":"Pending"}}"#;

fn node() -> M {
    M::new()
        .m(
            1,
            M::new()
                .s(1, "n1")
                .s(5, "nu1")
                .s(6, "5")
                .t(8, T0)
                .kv(11, "zone", "a"),
        )
        .m(
            2,
            M::new()
                .s(1, "10.1.0.0/24")
                .int(4, 1)
                .m(
                    5,
                    M::new()
                        .s(1, "dedicated")
                        .s(2, "gpu")
                        .s(3, "NoSchedule")
                        .m(4, M::new()),
                )
                .m(
                    5,
                    M::new()
                        .s(1, "node.kubernetes.io/unreachable")
                        .s(2, "")
                        .s(3, "NoExecute")
                        .t(4, T0),
                ),
        )
        .m(
            3,
            M::new()
                .kq(1, "cpu", "8")
                .kq(1, "pods", "110")
                .kq(2, "cpu", "7900m")
                .kq(2, "memory", "31Gi")
                .kq(2, "pods", "110")
                .s(3, "")
                .m(
                    4,
                    M::new()
                        .s(1, "Ready")
                        .s(2, "True")
                        .t(3, T0 + 9)
                        .t(4, T0)
                        .s(5, "KubeletReady")
                        .s(6, "ok"),
                )
                .m(8, M::new().s(1, "registry/image:1").int(2, 1000)),
        )
}

const NODE_JSON: &str = r#"{"metadata":{"name":"n1","uid":"nu1","resourceVersion":"5","creationTimestamp":"2026-11-30T10:00:00Z","labels":{"zone":"a"}},
 "spec":{"podCIDR":"10.1.0.0/24","unschedulable":true,"taints":[{"key":"dedicated","value":"gpu","effect":"NoSchedule"},{"key":"node.kubernetes.io/unreachable","effect":"NoExecute","timeAdded":"2026-11-30T10:00:00Z"}]},
 "status":{"capacity":{"cpu":"8","pods":"110"},"allocatable":{"cpu":"7900m","memory":"31Gi","pods":"110"},"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":"2026-11-30T10:00:09Z","lastTransitionTime":"2026-11-30T10:00:00Z","reason":"KubeletReady","message":"ok"}],"images":[{"names":["registry/image:1"],"sizeBytes":1000}]}}"#;

fn kind_of(kind: &'static str) -> ObjectType {
    ObjectType {
        kind,
        api_version: "v1",
    }
}

fn from_json(kind: &'static str, items: &[&str]) -> DecodedList {
    let text = format!(
        r#"{{"kind":"{kind}List","apiVersion":"v1","metadata":{{"resourceVersion":"42"}},"items":[{}]}}"#,
        items.join(",")
    );
    let mut d = ListDecoder::new("the test's list", kind_of(kind));
    d.push(text.as_bytes()).unwrap();
    d.finish().unwrap()
}

/// Decodes `bytes` pushed `step` bytes at a time.
fn from_proto(kind: &'static str, bytes: &[u8], step: usize) -> Result<DecodedList, SnapshotError> {
    let mut d = ProtoListDecoder::new("the test's list", kind_of(kind)).unwrap();
    for chunk in bytes.chunks(step) {
        d.push(chunk)?;
    }
    d.finish()
}

#[test]
fn times_read_as_the_seconds_their_json_text_gives() {
    fn time(m: &M) -> P<Option<RawTime<'_>>> {
        V::Bytes(&m.0).time()
    }
    for seconds in [
        0,
        T0,
        951_782_400,     // 2000-02-29
        4_107_542_399,   // 2100-02-28T23:59:59
        -62_135_596_800, // 0001-01-01
        -62_167_219_200, // 0000-01-01, the first metav1.Time
        253_402_300_799, // 9999-12-31T23:59:59, the last
        -1,
        1_234_567_890,
    ] {
        let text = chrono::DateTime::from_timestamp(seconds, 0)
            .unwrap()
            .format("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        let from_json = RawTime::Text(Str(Cow::Owned(text.clone())));
        let message = M::new().int(1, seconds);
        let from_proto = time(&message).unwrap().unwrap();
        assert_eq!(from_proto, RawTime::Seconds(seconds), "{text}");
        let obj = super::super::convert::Obj {
            kind: "Pod",
            namespace: "ns",
            name: "p",
        };
        assert_eq!(
            super::super::convert::time("f", obj, "x", &from_proto).unwrap(),
            super::super::convert::time("f", obj, "x", &from_json).unwrap(),
            "{text}"
        );
    }
    // Nanoseconds (field 2) do not change the second.
    assert_eq!(
        time(&M::new().int(1, T0).int(2, 999_999_999)).unwrap(),
        Some(RawTime::Seconds(T0))
    );
    assert_eq!(
        time(&M::new()).unwrap(),
        None,
        "an empty message is no time"
    );
    for out in [253_402_300_800, -62_167_219_201, i64::MAX, i64::MIN] {
        assert_eq!(
            time(&M::new().int(1, out)),
            Err(Bad("a time out of range")),
            "{out}"
        );
    }
}

#[test]
fn pods_and_nodes_read_from_protobuf_as_from_their_json() {
    let pods = response("PodList", &[rich_pod(), bare_pod()]);
    let json = from_json("Pod", &[RICH_POD_JSON, BARE_POD_JSON]);
    let proto = from_proto("Pod", &pods, pods.len()).unwrap();
    assert_eq!(proto.parts.pods.len(), 2);
    assert_eq!(format!("{:?}", proto.parts), format!("{:?}", json.parts));
    assert_eq!(proto.resource_version, "42");
    assert_eq!(proto.continue_token, "");
    let p = &proto.parts.pods[0];
    assert_eq!(p.node_name.as_deref(), Some("n1"));
    assert!(p.has_request_evict_only_annotation);
    assert!(p.has_eviction_in_progress_annotation);
    assert!(!proto.parts.pods[1].has_request_evict_only_annotation);
    assert!(!proto.parts.pods[1].has_eviction_in_progress_annotation);
    assert_eq!(
        (p.do_not_disrupt, p.protected_until),
        (
            Some(crate::snapshot::DoNotDisrupt::Karpenter),
            Some(1_798_736_400)
        )
    );
    assert_eq!(
        p.pod_group.as_deref(),
        Some("train"),
        "spec.schedulingGroup"
    );
    assert_eq!(proto.parts.pods[1].pod_group, None);
    assert!(
        proto.parts.pods[1].node_name.is_none(),
        "an empty nodeName is none"
    );

    let nodes = response("NodeList", &[node()]);
    let json = from_json("Node", &[NODE_JSON]);
    let proto = from_proto("Node", &nodes, nodes.len()).unwrap();
    assert_eq!(proto.parts.nodes.len(), 1);
    assert!(proto.parts.nodes[0].unschedulable);
    assert_eq!(format!("{:?}", proto.parts), format!("{:?}", json.parts));
}

#[test]
fn a_response_read_in_pieces_of_any_size_reads_the_same() {
    let pods = response("PodList", &[rich_pod(), bare_pod(), rich_pod()]);
    let whole = format!("{:?}", from_proto("Pod", &pods, pods.len()).unwrap().parts);
    for step in [1, 2, 3, 7, 64, 1000] {
        let parts = from_proto("Pod", &pods, step).unwrap().parts;
        assert_eq!(format!("{parts:?}"), whole, "in pieces of {step}");
    }
}

#[test]
fn a_cut_or_damaged_response_is_an_error_that_says_where() {
    let pods = response("PodList", &[rich_pod(), bare_pod()]);
    // Every cut short of the whole is refused (the envelope's last two fields are
    // empty strings, two bytes each: cutting those leaves the list whole but not the
    // envelope).
    for cut in 0..pods.len() - 4 {
        let e = from_proto("Pod", &pods[..cut], 4096)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("the test's list") && e.contains("protobuf at byte"),
            "{e}"
        );
    }
    let mut wrong = pods.clone();
    wrong[0] = b'{';
    let e = from_proto("Pod", &wrong, 4096).unwrap_err().to_string();
    assert!(e.contains("not the API's protobuf encoding"), "{e}");
    // A string field given a number: the item is named.
    let odd = response("PodList", &[bare_pod(), M::new().m(1, M::new().int(1, 5))]);
    let e = from_proto("Pod", &odd, 4096).unwrap_err().to_string();
    assert!(e.contains("item #1") && e.contains("a number where"), "{e}");
    let bad_utf8 = response(
        "PodList",
        &[M::new().m(1, M::new().bytes(1, &[0xff, 0xfe]))],
    );
    let e = from_proto("Pod", &bad_utf8, 4096).unwrap_err().to_string();
    assert!(e.contains("not UTF-8"), "{e}");
}

#[test]
fn a_status_is_read_as_the_failure_it_is() {
    let status = M::new()
        .s(2, "Failure")
        .s(3, "pods is forbidden: User \"x\" cannot list")
        .s(4, "Forbidden")
        .int(6, 403);
    let mut body = MAGIC.to_vec();
    body.extend_from_slice(
        &M::new()
            .m(1, M::new().s(1, "v1").s(2, "Status"))
            .m(2, status)
            .0,
    );
    let s = decode_status(&body).unwrap();
    assert_eq!((s.code, s.reason.as_str()), (403, "Forbidden"));
    assert!(s.message.contains("forbidden"));
    let e = from_proto("Pod", &body, 4096).unwrap_err().to_string();
    assert!(e.contains("answered a Status"), "{e}");
    assert_eq!(decode_status(&response("PodList", &[])), None);
    assert_eq!(decode_status(b"{\"kind\":\"Status\"}"), None);
}

/// Each protobuf table reads, for its wire struct, every field the JSON tables read,
/// but those of kinds that are not read from protobuf (PodDisruptionBudget, PodGroup)
/// and a List's own.
#[test]
fn the_protobuf_tables_cover_the_json_fields() {
    let pods = response("PodList", &[rich_pod()]);
    from_proto("Pod", &pods, pods.len()).unwrap();
    let nodes = response("NodeList", &[node()]);
    from_proto("Node", &nodes, nodes.len()).unwrap();
    let not_in_protobuf: &[(&str, &str)] = &[
        ("RawObject", "kind"),
        ("RawObject", "apiVersion"),
        ("RawObject", "items"),
        ("RawObject", "value"),
        ("RawSpec", "selector"),
        ("RawSpec", "minMember"),
        ("RawSpec", "schedulingPolicy"),
        ("RawSpec", "disruptionMode"),
        ("RawStatus", "disruptionsAllowed"),
        // The workloads a surge reads, listed in JSON.
        ("RawMeta", "generation"),
        ("RawSpec", "replicas"),
        ("RawSpec", "paused"),
        ("RawSpec", "scaleTargetRef"),
        ("RawStatus", "observedGeneration"),
        ("RawStatus", "replicas"),
        ("RawStatus", "updatedReplicas"),
        ("RawStatus", "availableReplicas"),
        ("RawStatus", "hard"),
        ("RawStatus", "used"),
    ];
    let read = tables::READ.lock().unwrap().clone();
    let mut by_struct: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for (name, keys) in &read {
        by_struct
            .entry(name)
            .or_default()
            .extend(keys.iter().copied());
    }
    let json = super::super::fast::tables::serde_fields_by_name();
    for (name, keys) in &by_struct {
        let fields = json
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name}: no JSON table"))
            .1;
        for key in keys {
            assert!(fields.contains(key), "{name}: {key} is not a JSON field");
        }
        for field in fields {
            assert!(
                keys.contains(field) || not_in_protobuf.contains(&(name, field)),
                "{name}: the JSON field {field} has no protobuf field"
            );
        }
    }
    for name in [
        "RawObject",
        "RawMeta",
        "RawOwner",
        "RawSpec",
        "RawStatus",
        "RawContainer",
        "RawResources",
        "RawPort",
        "RawToleration",
        "RawTaint",
        "RawVolume",
        "RawPvcSource",
        "RawTopologySpreadConstraint",
        "LabelSelectorSpec",
        "LabelSelectorRequirement",
        "RawAffinity",
        "RawNodeAffinity",
        "RawNodeSelector",
        "RawNodeSelectorTerm",
        "RawNodeSelectorRequirement",
        "RawPreferredSchedulingTerm",
        "RawPodAffinity",
        "RawPodAffinityTerm",
        "RawWeightedPodAffinityTerm",
        "RawCondition",
        "RawContainerStatus",
        "RawContainerState",
        "RawReason",
        "RawTerminated",
        "RawSchedulingGroup",
    ] {
        assert!(
            by_struct.contains_key(name),
            "{name}: no protobuf table was read"
        );
    }
}
