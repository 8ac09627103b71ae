use super::super::tests::{mutated, INT_KEYS};
use super::*;
use crate::snapshot::synthetic::{generate_json, Config, Rng};

/// Objects with every field the wire shapes read, and the odd forms JSON allows.
const OBJECTS: &[&str] = &[
        r#"{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1","labels":{"zone":"a","kubernetes.io/hostname":"n1"},"annotations":null,"uid":"u-n1"},"spec":{"unschedulable":true,"podCIDR":"10.0.0.0/24","taints":[{"key":"gpu","value":"yes","effect":"NoSchedule","timeAdded":null},{"key":"k","effect":"NoExecute"}]},"status":{"capacity":{"cpu":"8","memory":"32Gi","pods":"110"},"allocatable":{"cpu":"7800m","memory":"30Gi","pods":"110","nvidia.com/gpu":"4"},"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","lastTransitionTime":"2026-01-01T00:00:00Z","lastHeartbeatTime":"2026-01-02T00:00:00Z"},{"type":"MemoryPressure","status":"False","reason":null}],"nodeInfo":{"kubeletVersion":"v1.33.2"},"images":[{"names":["a","b"],"sizeBytes":123}]}}"#,
        r#"{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"web","namespace":"shop","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"apiVersion\":\"policy/v1\",\"x\":\"\\u00e9\\n\\t\\/\"}\n"}},"spec":{"minAvailable":"50%","selector":{"matchLabels":{"app":"web","tier":"front"},"matchExpressions":[{"key":"track","operator":"In","values":["stable","canary"]},{"key":"gone","operator":"DoesNotExist"}]}},"status":{"disruptionsAllowed":2,"currentHealthy":5,"observedGeneration":-3}}"#,
        r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop","labels":{"team":"a"},"creationTimestamp":null},"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}}"#,
        r#"{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"high"},"value":1000000,"globalDefault":false,"description":"ünïcödé €"}"#,
        r#"{"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"PodGroup","metadata":{"name":"g","namespace":"ml"},"spec":{"minMember":null,"scheduleTimeoutSeconds":10}}"#,
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1","namespace":"ml","uid":"u1","resourceVersion":"4711","generateName":"p-","labels":{"app":"w","tier":"w2"},"annotations":{"descheduler.alpha.kubernetes.io/evict":"","descheduler.alpha.kubernetes.io/prefer-no-eviction":{"x":[1,2.5e-3,true,false,null]},"kubernetes.io/config.mirror":"m","kubernetes.io/config.source":"file","scheduling.k8s.io/group-name":"g","kubernetes.io/config.source":null},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"w-1","uid":"rs","controller":true,"blockOwnerDeletion":true},{"kind":"Job","name":"j","uid":"j1","controller":null}],"creationTimestamp":"2026-01-01T00:00:00Z","deletionTimestamp":"2026-01-03T00:00:00Z"},"spec":{"nodeName":"n1","overhead":{"cpu":"10m"},"initContainers":[{"name":"init","image":"busybox","resources":{"requests":{"cpu":"2"}}},{"name":"side","image":"envoy","restartPolicy":"Always","resources":{"limits":{"memory":"1Gi"},"claims":[{"name":"c"}]}}],"containers":[{"name":"a","image":"img:1","ports":[{"containerPort":80,"hostPort":8080,"protocol":"UDP"},{"containerPort":81,"hostPort":null,"protocol":null}],"resources":{"requests":{"cpu":"500m","memory":"1Gi","nvidia.com/gpu":"1"},"limits":{"cpu":"1","memory":"1Gi"}},"env":[{"name":"X","value":"a \"quoted\" value"}]},{"image":"img:2","resources":{}}],"priority":-5,"priorityClassName":"high","tolerations":[{"key":"gpu","operator":"Exists","effect":"NoSchedule"},{"operator":"Equal","value":"v","effect":null,"tolerationSeconds":300}],"nodeSelector":{"disk":"ssd"},"affinity":null,"resources":null,"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"w"}},"minDomains":2,"nodeAffinityPolicy":"Ignore","nodeTaintsPolicy":"Honor","matchLabelKeys":["pod-template-hash"]},{"maxSkew":3,"topologyKey":"host","whenUnsatisfiable":"ScheduleAnyway","labelSelector":null,"minDomains":null}],"volumes":[{"name":"a","emptyDir":{}},{"name":"b","hostPath":{"path":"/x"}},{"name":"c","persistentVolumeClaim":{"claimName":"data","readOnly":true}},{"name":"d","emptyDir":null,"persistentVolumeClaim":null},{"name":"e","configMap":{"name":"c","defaultMode":420}}],"resourceClaims":[{"name":"gpu"},7],"schedulerName":"default-scheduler"},"status":{"phase":"Running","reason":"Evicted","startTime":"2026-01-01T00:00:05Z","conditions":[{"type":"Ready","status":"False","reason":"ContainersNotReady","lastTransitionTime":null}],"containerStatuses":[{"name":"a","restartCount":12,"state":{"waiting":{"reason":"CrashLoopBackOff","message":"back-off"}},"lastState":{"terminated":{"exitCode":1}}},{"restartCount":0,"state":{"running":{"startedAt":"2026-01-01T00:00:06Z"},"terminated":null,"waiting":null}}],"initContainerStatuses":[{"restartCount":1,"state":{"terminated":{"reason":"Completed","exitCode":0}}}],"ephemeralContainerStatuses":[{"restartCount":2,"state":{}}],"hostIPs":[{"ip":"10.0.0.1"}]}}"#,
        r#"{"kind":"Pod","metadata":{"name":"bare"}}"#,
        r#"{"kind":"Pod","metadata":{"name":"served","namespace":"n","managedFields":[{"manager":"kubelet","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:ownerReferences":{".":{},"k:{\"uid\":\"9c2d\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:env":{"k:{\"name\":\"X\u0041\"}":{}}}}}}}]},"spec":{"containers":[{"name":"app","image":"i"}]}}"#,
        "{ \"kind\" : \"Pod\" ,\n\t\"metadata\" :\r\n { \"name\" : \"spaced\" , \"labels\" : { } , \"ownerReferences\" : [ ] } , \"spec\" : { \"containers\" : [ { \"image\" : \"i\" , \"ports\" : [ ] } ] , \"priority\" : 0 } , \"status\" : { } }",
        r#"{"kind":"Pod","metadata":{"name":"big","namespace":"n"},"spec":{"priority":2147483647,"containers":[]},"status":{"containerStatuses":[{"restartCount":-2147483648,"state":{"terminated":{"exitCode":-1,"reason":"Error"}}}]}}"#,
        r#"{"kind":"Pod","metadata":{"name":"aff","namespace":"n"},"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a","b"]}],"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]},{}]},"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":5,"preference":{"matchExpressions":[{"key":"disk","operator":"Exists"}]}}]},"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"db"}},"namespaces":["a","b"],"topologyKey":"zone"}]},"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":100,"podAffinityTerm":{"labelSelector":null,"namespaceSelector":{"matchExpressions":[{"key":"team","operator":"NotIn","values":["x"]}]},"topologyKey":"kubernetes.io/hostname","matchLabelKeys":["h"]}}]}}}}"#,
        r#"{"kind":"Pod","metadata":{"name":"aff2"},"spec":{"affinity":{"nodeAffinity":null,"podAffinity":{},"podAntiAffinity":null}}}"#,
        r#"{"kind":"Pod","metadata":{"name":"gang-0","namespace":"ml"},"spec":{"nodeName":"n1","schedulingGroup":{"podGroupName":"train"}}}"#,
        r#"{"kind":"Pod","metadata":{"name":"gang-1","namespace":"ml"},"spec":{"schedulingGroup":{"podGroupName":null}}}"#,
        r#"{"kind":"Pod","metadata":{"name":"gang-2","namespace":"ml"},"spec":{"schedulingGroup":null,"schedulingPolicy":null,"disruptionMode":null}}"#,
        r#"{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12746","creationTimestamp":null,"annotations":{"k8s.io/initial-events-end":"true"}}}"#,
        r#"{"kind":"Pod","metadata":{"name":"ie","resourceVersion":"","annotations":{"k8s.io/initial-events-end":"false"}}}"#,
        r#"{"kind":"Pod","metadata":{"name":"ie2","annotations":{"k8s.io/initial-events-end":"true","k8s.io/initial-events-end":null}}}"#,
        // The last RARE: read by serde (the reader here gives up on them).
        r#"{"kind":"Pod","metadata":{"name":"ie3","annotations":{"k8s.io/initial-events-end":"tru\u0065"}}}"#,
        r#"{"kind":"Pod","metadata":{"name":"esc\u0061ped","namespace":"n"}}"#,
        r#"{"kind":"Pod","metadata":{"name":"res"},"spec":{"resources":{"requests":{"cpu":"1"}}}}"#,
        r#"{"kind":"PodGroup","apiVersion":"scheduling.volcano.sh/v1beta1","metadata":{"name":"g"},"spec":{"minMember":3}}"#,
        r#"{"kind":"PodGroup","apiVersion":"scheduling.k8s.io/v1beta1","metadata":{"name":"k","namespace":"ml"},"spec":{"schedulingPolicy":{"gang":{"minCount":4}},"disruptionMode":{"all":{}}}}"#,
        r#"{"kind":"List","items":[{"kind":"Pod","metadata":{"name":"inner"}}]}"#,
    ];

const RARE: usize = 6;

/// What serde reads from the start of `text`, and where it stops.
fn serde_read(text: &str) -> Option<(String, usize)> {
    let mut it = serde_json::Deserializer::from_str(text).into_iter::<RawObject<'_>>();
    let obj = it.next()?.ok()?;
    Some((format!("{obj:?}"), it.byte_offset()))
}

/// Reads every text into one object, as a window's items are read, and checks each read
/// against serde's: the same object, and the same end. Returns how many were read here.
fn agree(texts: &[String]) -> usize {
    let mut place = RawObject::default();
    let mut read = 0;
    for text in texts {
        let mut r = Reader::new(text, 0);
        if object(&mut r, &mut place).is_none() {
            continue;
        }
        read += 1;
        let Some((expected, end)) = serde_read(text) else {
            panic!("read by hand, refused by serde: {text}");
        };
        assert_eq!(format!("{place:?}"), expected, "{text}");
        assert_eq!(r.pos(), end, "{text}");
    }
    read
}

fn synthetic_items() -> Vec<String> {
    let json = generate_json(&Config::new(20, 600, 3));
    let list: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let items = list["items"].as_array().unwrap();
    let mut texts: Vec<String> = items.iter().map(|v| v.to_string()).collect();
    texts.extend(
        items
            .iter()
            .step_by(7)
            .map(|v| serde_json::to_string_pretty(v).unwrap()),
    );
    texts
}

#[test]
fn objects_read_by_hand_are_what_serde_reads() {
    let mut texts: Vec<String> = OBJECTS.iter().map(|s| s.to_string()).collect();
    // Each after every other, so that what one leaves in the reused object must not
    // show in the next.
    let n = texts.len();
    for i in 0..n {
        for j in 0..n {
            texts.push(texts[i].clone());
            texts.push(texts[j].clone());
        }
    }
    let read = agree(&texts);
    assert_eq!(
        read,
        texts.len() - RARE * (1 + 2 * n),
        "all but the rare forms"
    );
    let synthetic = synthetic_items();
    assert_eq!(agree(&synthetic), synthetic.len(), "every generated object");
}

#[test]
fn resource_version_and_the_end_of_initial_events_are_read() {
    let bookmark = r#"{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12746","annotations":{"k8s.io/initial-events-end":"true"}}}"#;
    let other = r#"{"kind":"Pod","metadata":{"name":"p","annotations":{"k8s.io/initial-events-end":"false"}}}"#;
    for (text, version, end) in [(bookmark, "12746", true), (other, "", false)] {
        let mut o = RawObject::default();
        object(&mut Reader::new(text, 0), &mut o).unwrap();
        assert_eq!(o.metadata.resource_version(), version);
        assert_eq!(o.metadata.annotations.initial_events_end(), end);
        let o: RawObject<'_> = serde_json::from_str(text).unwrap();
        assert_eq!(o.metadata.resource_version(), version);
        assert_eq!(o.metadata.annotations.initial_events_end(), end);
    }
}

/// The wire structs read here, each by its table.
const TABLES: &[&str] = &[
    "LabelSelectorRequirement",
    "LabelSelectorSpec",
    "RawAffinity",
    "RawCondition",
    "RawContainer",
    "RawContainerState",
    "RawContainerStatus",
    "RawImage",
    "RawMeta",
    "RawNodeAffinity",
    "RawNodeSelector",
    "RawNodeSelectorRequirement",
    "RawNodeSelectorTerm",
    "RawObject",
    "RawOwner",
    "RawPodAffinity",
    "RawPodAffinityTerm",
    "RawPort",
    "RawPreferredSchedulingTerm",
    "RawPvcSource",
    "RawReason",
    "RawResources",
    "RawSchedulingGroup",
    "RawSpec",
    "RawStatus",
    "RawTaint",
    "RawTerminated",
    "RawToleration",
    "RawTopologySpreadConstraint",
    "RawVolume",
    "RawWeightedPodAffinityTerm",
];

/// Fields the tables deliberately lack, by wire struct, each with the reason: none. (A
/// member whose value is left to serde, such as a spec's `resources`, stays in its table
/// with a reader that gives up.)
const NOT_IN_TABLES: &[(&str, &str, &str)] = &[];

#[test]
fn each_table_reads_the_fields_serde_reads() {
    // Every table runs on these objects (what it reads is another test's concern).
    let mut place = RawObject::default();
    for text in OBJECTS {
        object(&mut Reader::new(text, 0), &mut place);
    }
    let read = tables::READ.lock().unwrap().clone();
    let mut names: Vec<&str> = read.iter().map(|t| t.0).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names, TABLES, "the wire structs read by a table");
    for (name, keys, fields) in read {
        let mut keys = keys.to_vec();
        keys.extend(
            NOT_IN_TABLES
                .iter()
                .filter(|(s, _, _)| *s == name)
                .map(|(_, field, _)| *field),
        );
        keys.sort_unstable();
        let mut fields = fields().to_vec();
        fields.sort_unstable();
        assert_eq!(
            keys, fields,
            "the keys of the table of {name}: its serde fields"
        );
    }
}

/// Every key of the objects in `text`, at any depth.
fn keys(text: &str) -> std::collections::BTreeSet<String> {
    fn walk(v: &serde_json::Value, out: &mut std::collections::BTreeSet<String>) {
        match v {
            serde_json::Value::Object(m) => m.iter().for_each(|(k, v)| {
                out.insert(k.clone());
                walk(v, out);
            }),
            serde_json::Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Default::default();
    walk(&serde_json::from_str(text).unwrap(), &mut out);
    out
}

/// `text` with the first member named `key` given twice.
fn repeated(text: &str, key: &str) -> Option<String> {
    let at = text.find(&format!("\"{key}\":"))?;
    let value_at = at + key.len() + 3;
    let mut it = serde_json::Deserializer::from_str(&text[value_at..]).into_iter::<IgnoredAny>();
    it.next()?.ok()?;
    let member = &text[at..value_at + it.byte_offset()];
    Some(format!("{}{member},{}", &text[..at], &text[at..]))
}

#[test]
fn minus_zero_is_left_to_serde() {
    let text = r#"{"kind":"PriorityClass","metadata":{"name":"p"},"value":-0}"#;
    assert!(object(&mut Reader::new(text, 0), &mut RawObject::default()).is_none());
    assert!(serde_read(text).is_none(), "serde reads -0 as a float");
    assert_eq!(Reader::new("-0,", 0).int(), None);
    assert_eq!(Reader::new("-10,", 0).int(), Some(-10));
    assert_eq!(Reader::new("0,", 0).int(), Some(0));
}

#[test]
fn mutated_objects_are_read_as_serde_reads_them_or_left_to_serde() {
    let mut seeds: Vec<String> = OBJECTS.iter().map(|s| s.to_string()).collect();
    seeds.extend(synthetic_items().into_iter().step_by(13));
    let mut rng = Rng::new(11);
    let mut texts = Vec::new();
    for seed in &seeds {
        for _ in 0..40 {
            texts.extend(mutated(&mut rng, seed, true));
        }
        // Each member given twice, a string turned null, a number turned float.
        for key in keys(seed) {
            texts.extend(repeated(seed, &key));
        }
        texts.push(seed.replacen("\"image\":\"", "\"image\":null,\"x\":\"", 1));
        texts.push(seed.replacen("\"priority\":", "\"priority\":1.5,\"y\":", 1));
        // `-0` in each integer field (serde reads a float, and refuses it).
        for key in INT_KEYS {
            let field = format!("\"{key}\":");
            texts.push(seed.replacen(&field, &format!("{field}-0,\"y\":"), 1));
        }
    }
    let read = agree(&texts);
    // Most mutations make invalid JSON or a value serde refuses; many land in skipped
    // or tolerant parts, and those are read here.
    assert!(read > texts.len() / 10, "{read} of {}", texts.len());
    assert!(read < texts.len(), "{read} of {}", texts.len());
}
