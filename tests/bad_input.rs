//! Bad input: files cut short, amounts past what the planner counts, and other input a user
//! can give by mistake. Each is refused with a clear error, or planned as the whole input
//! would be; nothing is evicted on a guess.

use descheduler::framework::Pipeline;
use descheduler::plan::plan;
use descheduler::report::{ReadRow, Report};
use descheduler::snapshot::decode;
use std::path::{Path, PathBuf};

/// 2026-12-01T00:00:00Z
const NOW: i64 = 1_796_083_200;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every shipped policy (those with a golden plan), by name.
fn pipelines() -> Vec<(String, Pipeline)> {
    let golden = std::fs::read_dir(root().join("tests/golden")).unwrap();
    let mut names: Vec<String> = golden
        .filter_map(|e| Some(e.ok()?.path().file_stem()?.to_str()?.to_string()))
        .collect();
    names.sort();
    let load = |name: &String| {
        Pipeline::load(
            &root().join(format!("policies/{name}.yaml")),
            &descheduler::plugins::REGISTRY,
        )
    };
    names
        .iter()
        .map(|name| (name.clone(), load(name).unwrap_or_else(|e| panic!("{e}"))))
        .collect()
}

/// The pods each policy evicts, and what was read; or the decoding error.
fn plans(
    pipelines: &[(String, Pipeline)],
    file: &str,
    bytes: &[u8],
) -> Result<(Vec<Vec<String>>, ReadRow), String> {
    let snap = decode::load_bytes(file, bytes).map_err(|e| e.to_string())?;
    let evicted = pipelines
        .iter()
        .map(|(name, pipeline)| {
            let plan = plan(pipeline, &snap, NOW).unwrap_or_else(|e| panic!("{name}: {e}"));
            let mut pods: Vec<String> = Report::new(&snap, &plan)
                .evictions
                .into_iter()
                .map(|e| e.pod)
                .collect();
            pods.sort();
            pods
        })
        .collect();
    Ok((evicted, ReadRow::of(&snap)))
}

fn objects(r: &ReadRow) -> usize {
    r.nodes + r.pods + r.disruption_budgets + r.pod_groups + r.namespaces + r.priority_classes
}

/// `head -n i` of `text`, for every i.
fn cuts(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.match_indices('\n')
        .enumerate()
        .map(|(i, (at, _))| (i + 1, &text[..at + 1]))
}

/// The example as kubectl prints it (`kind: List` after the items): every cut is refused,
/// but for cuts in the envelope's last lines, which hold every item and plan the same.
#[test]
fn every_cut_of_the_example_is_refused_or_plans_the_same() {
    let pipelines = pipelines();
    let text = std::fs::read_to_string(root().join("examples/cluster-hotspot.yaml")).unwrap();
    let (full, _) = plans(&pipelines, "full", text.as_bytes()).unwrap();
    let mut planned = 0;
    for (line, cut) in cuts(&text) {
        match plans(&pipelines, "cut", cut.as_bytes()) {
            Err(_) => {}
            Ok((got, _)) => {
                assert_eq!(got, full, "head -n {line} plans otherwise");
                planned += 1;
            }
        }
    }
    // At most the cuts after `kind: List`, `metadata:` and `resourceVersion: ""` (the whole
    // file).
    assert!((1..=3).contains(&planned), "{planned}");
}

/// The PodDisruptionBudget cut from its selector (issue: `head -n 1226` of the example as
/// it was, with the envelope first, planned 3 evictions past the budget instead of 1).
#[test]
fn a_budget_cut_short_is_refused() {
    let text = std::fs::read_to_string(root().join("examples/cluster-hotspot.yaml")).unwrap();
    let at = text
        .find("      selector:\n        matchLabels:\n          app: \"api\"")
        .unwrap();
    // The envelope first, as a hand-written file may have it; cut in the selector.
    let envelope = "kind: \"List\"\nmetadata:\n  resourceVersion: \"\"\n";
    for cut in [&text[..at], &text[..at + "      selector:\n".len()]] {
        let cut = cut
            .replace(envelope, "")
            .replacen("items:\n", &format!("{envelope}items:\n"), 1);
        let err = decode::load_bytes("cut.yaml", cut.as_bytes())
            .err()
            .unwrap_or_else(|| panic!("a budget without its selector was read:\n{cut}"))
            .to_string();
        assert!(
            err.contains("PodDisruptionBudget shop/api") && err.contains("spec.selector"),
            "{err}"
        );
        assert!(err.contains("cut short"), "{err}");
    }
}

/// With the envelope first (a hand-written file, or a multi-document stream), a cut between
/// two objects leaves a valid smaller cluster, and nothing in the bytes tells it apart. What
/// can be refused is: a cut inside an object lacks a required field. The rest shows in the
/// counts of what was read, which every report prints; a cut that leaves every object
/// counted (one inside the last object, the budget) plans no eviction the whole file does
/// not.
#[test]
fn a_cut_of_a_file_with_its_envelope_first_is_refused_or_seen_in_the_counts() {
    // Most cuts plan here: two policies keep the test short (the combined one runs most
    // plugins; LowNodeUtilization moves the budget's pods).
    let pipelines: Vec<_> = pipelines()
        .into_iter()
        .filter(|(name, _)| name == "combined" || name == "lownodeutilization")
        .collect();
    assert_eq!(pipelines.len(), 2);
    let text = std::fs::read_to_string(root().join("examples/cluster-hotspot.yaml")).unwrap();
    let envelope = "kind: \"List\"\nmetadata:\n  resourceVersion: \"\"\n";
    let text = text
        .replace(envelope, "")
        .replacen("items:\n", &format!("{envelope}items:\n"), 1);
    let (full, full_read) = plans(&pipelines, "full", text.as_bytes()).unwrap();
    let (mut refused, mut short) = (0, 0);
    for (line, cut) in cuts(&text) {
        match plans(&pipelines, "cut", cut.as_bytes()) {
            Err(_) => refused += 1,
            Ok((_, read)) if objects(&read) < objects(&full_read) => short += 1,
            Ok((got, read)) => {
                assert_eq!(read, full_read, "head -n {line}");
                for (g, f) in got.iter().zip(&full) {
                    assert!(
                        g.iter().all(|p| f.contains(p)),
                        "head -n {line} plans {g:?}, the whole file {f:?}"
                    );
                }
            }
        }
    }
    assert!(refused > 0 && short > 0, "{refused} refused, {short} short");
}

/// A JSON file cut anywhere is not JSON.
#[test]
fn every_cut_of_the_example_as_json_is_refused() {
    let text = std::fs::read_to_string(root().join("examples/cluster-hotspot.yaml")).unwrap();
    let value: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
    let json = serde_json::to_string_pretty(&value).unwrap();
    let end = json.trim_end().len();
    for at in (1..end).step_by(61).chain(end.saturating_sub(300)..end) {
        assert!(
            decode::load_bytes("cut.json", &json.as_bytes()[..at]).is_err(),
            "the first {at} bytes were read"
        );
    }
}

/// Decodes `yaml` as a file of that name would be read.
fn load_yaml(yaml: &str) -> Result<descheduler::snapshot::ClusterSnapshot, String> {
    decode::load_bytes("cluster.yaml", yaml.as_bytes()).map_err(|e| e.to_string())
}

const NODE: &str = r#"
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
  status:
    allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
    conditions: [{type: Ready, status: "True"}]
"#;

fn pod(name: &str, memory: &str) -> String {
    format!(
        r#"
- apiVersion: v1
  kind: Pod
  metadata: {{name: {name}, namespace: default}}
  spec:
    nodeName: n1
    containers: [{{name: c, resources: {{requests: {{memory: "{memory}"}}}}}}]
  status: {{phase: Running}}
"#
    )
}

fn list(items: &[String]) -> String {
    format!("apiVersion: v1\nitems:\n{}kind: List\n", items.concat())
}

#[test]
fn sums_past_what_the_planner_counts_are_errors_naming_the_object() {
    // 8Ei and 1Gi on one node wrapped to a negative memory use (-53,687,091,193.8%).
    let yaml = list(&[NODE.into(), pod("big", "7Ei"), pod("bigger", "7Ei")]);
    let err = load_yaml(&yaml).expect_err("an overflowing total was read");
    assert!(
        err.contains("Pod default/bigger") && err.contains("memory"),
        "{err}"
    );
    // One amount past it.
    let err = load_yaml(&list(&[NODE.into(), pod("huge", "8Ei")])).unwrap_err();
    assert!(
        err.contains("Pod default/huge") && err.contains("requests.memory"),
        "{err}"
    );
    // Two containers of one pod.
    let two = pod("two", "7Ei").replace(
        "containers: [",
        "containers: [{name: d, resources: {requests: {memory: 7Ei}}}, ",
    );
    let err = load_yaml(&list(&[NODE.into(), two])).unwrap_err();
    assert!(
        err.contains("Pod default/two") && err.contains("memory"),
        "{err}"
    );
    // Within the bound: read.
    load_yaml(&list(&[NODE.into(), pod("a", "3Ei"), pod("b", "3Ei")])).unwrap();
}

#[test]
fn negative_amounts_are_refused() {
    let err = load_yaml(&list(&[NODE.into(), pod("neg", "-1Gi")])).unwrap_err();
    assert!(
        err.contains("Pod default/neg") && err.contains("negative"),
        "{err}"
    );
    let node = NODE.replace("cpu: \"4\"", "cpu: \"-4\"");
    let err = load_yaml(&list(&[node])).unwrap_err();
    assert!(
        err.contains("Node n1") && err.contains("status.allocatable.cpu"),
        "{err}"
    );
}

#[test]
fn objects_without_apiversion_kind_or_name_are_refused() {
    for (cut, field) in [
        (
            NODE.replace("- apiVersion: v1\n  kind", "- kind"),
            "apiVersion",
        ),
        (NODE.replace("  kind: Node\n", ""), "kind"),
        (NODE.replace("{name: n1}", "{}"), "metadata.name"),
    ] {
        let err = load_yaml(&list(&[cut])).unwrap_err();
        assert!(err.contains(field), "{field}: {err}");
    }
}

#[test]
fn a_list_without_its_kind_or_with_another_kind_is_refused() {
    let no_kind = list(&[NODE.into()]).replace("kind: List\n", "");
    let err = load_yaml(&no_kind).unwrap_err();
    assert!(err.contains("cut short"), "{err}");
    let pod_kind = list(&[NODE.into()]).replace("kind: List\n", "kind: Pod\n");
    let err = load_yaml(&pod_kind).unwrap_err();
    assert!(err.contains("\"Pod\" is not a list kind"), "{err}");
    let json = serde_json::json!({"apiVersion": "v1", "items": [], "kind": "Pod"});
    let err = decode::load_bytes("x.json", json.to_string().as_bytes())
        .unwrap_err()
        .to_string();
    assert!(err.contains("\"Pod\" is not a list kind"), "{err}");
}

/// The report says what was read, in every format.
#[test]
fn every_report_says_what_was_read() {
    let snap = decode::load_file(&root().join("examples/cluster-hotspot.yaml")).unwrap();
    let pipeline = Pipeline::load(
        Path::new(&root().join("policies/combined.yaml")),
        &descheduler::plugins::REGISTRY,
    )
    .unwrap();
    let plan = plan(&pipeline, &snap, NOW).unwrap();
    let report = Report::new(&snap, &plan);
    let read = report.read.unwrap();
    assert_eq!(read, ReadRow::of(&snap));
    assert_eq!((read.nodes, read.disruption_budgets), (6, 1));
    let table = report.render(descheduler::report::Format::Table);
    assert!(
        table.starts_with(&format!(
            "Read: nodes 6, pods {}, disruption budgets 1",
            read.pods
        )),
        "{table}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&report.render(descheduler::report::Format::Json)).unwrap();
    assert_eq!(json["read"]["disruptionBudgets"], 1);
}

/// The API server may hold a budget without a selector (it protects no pod): read from the
/// API it is taken as such; in a file it is refused (see above).
#[test]
fn a_budget_without_a_selector_from_the_api_protects_nothing() {
    use decode::stream::{ListDecoder, ObjectType};
    let mut list = ListDecoder::new(
        "the budgets list",
        ObjectType {
            kind: "PodDisruptionBudget",
            api_version: "policy/v1",
        },
    );
    list.push(br#"{"kind":"PodDisruptionBudgetList","metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"b","namespace":"ns"},"spec":{"minAvailable":1}}]}"#)
        .unwrap();
    let parts = list.finish().unwrap().parts;
    assert_eq!(parts.pdbs.len(), 1);
}

/// The YAML reader's limits grow with the file: a YAML list past the library's default
/// budget (250,000 nodes), a stream of more than 1,024 documents, and JSON after a
/// byte-order mark are read.
#[test]
fn large_yaml_snapshots_and_a_byte_order_mark_are_read() {
    use descheduler::snapshot::synthetic::{generate_json, Config};
    let json = generate_json(&Config::new(10, 3_000, 3));
    let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let yaml = serde_saphyr::to_string(&value).unwrap();
    let snap = load_yaml(&yaml).unwrap();
    assert_eq!(snap.pods.len(), 3_000);
    // 1,100 documents.
    let mut stream = NODE
        .trim_start()
        .trim_start_matches("- ")
        .replace("\n  ", "\n");
    for i in 0..1_100 {
        stream.push_str(&format!(
            "---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: ns-{i}}}\n"
        ));
    }
    assert_eq!(load_yaml(&stream).unwrap().namespaces.len(), 1_100);
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend_from_slice(&json);
    let snap = decode::load_bytes("bom.json", &bom).unwrap();
    assert_eq!(snap.pods.len(), 3_000);
}
