use super::table::{escape_for_terminal, table_cell, CELL_MAX, ELLIPSIS};
use super::*;
use crate::framework::Pipeline;
use crate::snapshot::synthetic::{self, Config};

#[test]
fn a_large_plan_reports_every_eviction_in_plan_order() {
    // Large enough for the rows to be split over the threads in many pieces.
    let snap = synthetic::snapshot(&Config::new(900, 30_000, 7));
    let policy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/scale-policy.yaml");
    let pipeline = Pipeline::load(&policy, &crate::plugins::REGISTRY).unwrap();
    let plan = crate::plan::plan(&pipeline, &snap, 1_796_083_200).unwrap();
    assert!(
        plan.evictions.len() >= 4096,
        "{} evictions",
        plan.evictions.len()
    );
    let report = Report::new(&snap, &plan);
    assert_eq!(report.evictions.len(), plan.evictions.len());
    for (row, e) in report.evictions.iter().zip(&plan.evictions) {
        assert_eq!(row.pod, snap.pod(e.pod).key());
        assert_eq!(row.node, &*snap.node(e.node).name);
        assert_eq!(
            (row.plugin.as_str(), row.reason.as_str()),
            (e.plugin, e.reason.as_str())
        );
    }
    assert_eq!(report.nodes.len(), plan.nodes.len());
    // The JSON reads back as the same report, whatever its buffer was sized to, and is
    // what serde_json's pretty printer writes (rows in several batches and pieces);
    // written straight from the plan, every format is the report's.
    // (The JSON carries no thresholds: they are drawn on the HTML page only.)
    let json = report.render(Format::Json);
    assert!(!report.thresholds.is_empty());
    let without_thresholds = Report {
        thresholds: Vec::new(),
        ..report.clone()
    };
    assert_eq!(
        serde_json::from_str::<Report>(&json).unwrap(),
        without_thresholds
    );
    assert_eq!(json, serde_json::to_string_pretty(&report).unwrap() + "\n");
    assert!(!report.not_chosen.is_empty());
    // The only notes: budgets the hard-constraint repairs were given first.
    assert!(
        report
            .notes
            .iter()
            .all(|n| n.message.contains("of its evictions waited")),
        "{:?}",
        report.notes
    );
    for format in [Format::Json, Format::Yaml, Format::Table, Format::Html] {
        let mut out = Vec::new();
        write(Input::plan(&snap, &plan), format, &mut out).unwrap();
        assert!(
            String::from_utf8(out).unwrap() == report.render(format),
            "{format:?}"
        );
    }
}

#[test]
fn json_written_on_all_cores_is_serde_json_pretty_text() {
    let eviction = |i: usize| EvictionRow {
        mechanism: "evict".into(),
        pod: format!("ns/p{i}"),
        node: "n1".into(),
        profile: "p".into(),
        plugin: "LowNodeUtilization".into(),
        // Escaped characters, a newline among them: indentation must not touch them.
        reason: format!("line \"{i}\"\nnext\ttab \u{e9}"),
        destination: (i % 3 == 0).then(|| "n2".into()),
        alternatives: if i % 6 == 0 {
            vec!["n3".into(), "n4".into()]
        } else {
            Vec::new()
        },
        gang: (i % 5 == 0).then(|| "PodGroup ns/g (scheduling.x-k8s.io)".into()),
        budgets: Vec::new(),
        result: (i % 7 == 0).then(|| "evicted".into()),
        landed: (i % 11 == 0).then(|| "n3".into()),
    };
    let percent = |cpu: f64| BTreeMap::from([("cpu".to_string(), cpu)]);
    let full = Report {
        evictions: (0..300).map(eviction).collect(),
        nodes: vec![
            NodeRow {
                name: "n1".into(),
                before: percent(80.5),
                after: BTreeMap::new(),
                after_range: BTreeMap::new(),
                measured: Some(MeasuredRow {
                    source: "prometheus".into(),
                    before: percent(90.0),
                    after: percent(10.25),
                }),
            },
            NodeRow {
                name: "n2".into(),
                before: BTreeMap::new(),
                after: percent(1.0),
                after_range: BTreeMap::from([("cpu".to_string(), [0.5, 1.5])]),
                measured: None,
            },
        ],
        notes: vec![NoteRow {
            profile: "p".into(),
            plugin: "LowNodeUtilization".into(),
            node: None,
            message: "no metrics".into(),
            skipped: true,
        }],
        not_chosen: vec![NotChosenRow {
            pod: "ns/q".into(),
            node: Some("n1".into()),
            profile: "p".into(),
            plugin: "RemoveDuplicates".into(),
            reason: "budget".into(),
        }],
        findings: Sections {
            tenants: vec![TenantRow {
                tenant: "a".into(),
                tenant_label: Some("team".into()),
                before: 60.0,
                after: 26.5,
                dominant_resource: Some("cpu".into()),
            }],
            pending: vec![
                PendingRow {
                    pod: Some("ml/solo".into()),
                    group: None,
                    pods: Vec::new(),
                    destination: Some(Some("n2".into())),
                    destinations: BTreeMap::new(),
                    made_room_by: vec!["ns/q".into()],
                    reason: None,
                },
                PendingRow {
                    pod: None,
                    group: Some("ml/train".into()),
                    pods: vec!["ml/t0".into()],
                    destination: Some(None),
                    destinations: BTreeMap::new(),
                    made_room_by: Vec::new(),
                    reason: Some("0/2 nodes are available".into()),
                },
            ],
        },
        read: Some(ReadRow {
            nodes: 2,
            pods: 300,
            ..ReadRow::default()
        }),
        thresholds: Vec::new(),
    };
    let empty = Report {
        evictions: Vec::new(),
        nodes: Vec::new(),
        notes: Vec::new(),
        not_chosen: Vec::new(),
        findings: Default::default(),
        read: None,
        thresholds: Vec::new(),
    };
    let only_tenants = Report {
        findings: Sections {
            tenants: full.findings.tenants.clone(),
            ..Sections::default()
        },
        ..empty.clone()
    };
    let only_pending = Report {
        findings: Sections {
            pending: full.findings.pending.clone(),
            ..Sections::default()
        },
        ..empty.clone()
    };
    for report in [&full, &empty, &only_tenants, &only_pending] {
        let expected = serde_json::to_string_pretty(report).unwrap() + "\n";
        assert_eq!(report.render(Format::Json), expected);
        let mut streamed = Vec::new();
        write(Input::Report(report), Format::Json, &mut streamed).unwrap();
        assert_eq!(String::from_utf8(streamed).unwrap(), expected);
    }
}

#[test]
fn pending_units_in_json_yaml_and_table() {
    let report = Report {
        evictions: Vec::new(),
        nodes: Vec::new(),
        notes: Vec::new(),
        not_chosen: Vec::new(),
        findings: Sections {
            pending: vec![
                PendingRow {
                    pod: Some("ml/solo".into()),
                    group: None,
                    pods: Vec::new(),
                    destination: Some(Some("n2".into())),
                    destinations: BTreeMap::new(),
                    made_room_by: vec!["web/a".into()],
                    reason: None,
                },
                PendingRow {
                    pod: None,
                    group: Some("ml/train".into()),
                    pods: vec!["ml/t0".into(), "ml/t1".into()],
                    destination: None,
                    destinations: BTreeMap::from([
                        ("ml/t0".into(), "n1".into()),
                        ("ml/t1".into(), "n3".into()),
                    ]),
                    made_room_by: vec!["web/b".into(), "web/c".into()],
                    reason: None,
                },
                PendingRow {
                    pod: Some("ml/huge".into()),
                    group: None,
                    pods: Vec::new(),
                    destination: Some(None),
                    destinations: BTreeMap::new(),
                    made_room_by: Vec::new(),
                    reason: Some("0/3 nodes are available: 3 Insufficient cpu".into()),
                },
            ],
            ..Sections::default()
        },
        read: None,
        thresholds: Vec::new(),
    };
    let json: serde_json::Value = serde_json::from_str(&report.render(Format::Json)).unwrap();
    assert_eq!(
        json["pending"],
        serde_json::json!([
            {"pod": "ml/solo", "destination": "n2", "madeRoomBy": ["web/a"]},
            {"group": "ml/train", "pods": ["ml/t0", "ml/t1"],
             "destinations": {"ml/t0": "n1", "ml/t1": "n3"}, "madeRoomBy": ["web/b", "web/c"]},
            {"pod": "ml/huge", "destination": null, "madeRoomBy": [],
             "reason": "0/3 nodes are available: 3 Insufficient cpu"}
        ])
    );
    // read back as written, `null` destination included
    let back: Report = serde_json::from_str(&report.render(Format::Json)).unwrap();
    assert_eq!(back, report);
    let yaml = report.render(Format::Yaml);
    assert!(yaml.contains("madeRoomBy:"), "{yaml}");
    assert!(yaml.contains("destination: null"), "{yaml}");
    let table = report.render(Format::Table);
    assert!(table.contains("Pending pods and gangs:"), "{table}");
    assert!(table.contains("group ml/train"), "{table}");
    assert!(table.contains("t0=n1,t1=n3"), "{table}");
    assert!(table.contains("web/b,web/c"), "{table}");
    assert!(table.contains("3 Insufficient cpu"), "{table}");
    // the page carries the list and the section that shows it
    let page = report.render(Format::Html);
    assert!(page.contains(r#"<section id="pending" hidden>"#));
    assert!(page.contains("ml/train") && page.contains("madeRoomBy"));
}

#[test]
fn the_table_escapes_what_would_drive_the_terminal() {
    let report = Report {
        evictions: vec![EvictionRow {
            mechanism: "evict".into(),
            pod: "ns/\u{1b}[2Jgone".into(),
            node: "n\u{202e}1".into(),
            profile: "p".into(),
            plugin: "PodLifeTime".into(),
            reason: "tab\there\r\u{7f}\u{9b}".into(),
            destination: None,
            alternatives: Vec::new(),
            gang: None,
            budgets: Vec::new(),
            result: None,
            landed: None,
        }],
        nodes: Vec::new(),
        notes: vec![NoteRow {
            profile: "p".into(),
            plugin: "x".into(),
            node: Some("\u{2066}n".into()),
            message: "m\u{1b}".into(),
            skipped: false,
        }],
        not_chosen: Vec::new(),
        findings: Default::default(),
        read: None,
        thresholds: Vec::new(),
    };
    let table = report.render(Format::Table);
    for c in [
        '\u{1b}', '\u{202e}', '\t', '\r', '\u{7f}', '\u{9b}', '\u{2066}',
    ] {
        assert!(!table.contains(c), "{c:?} in {table}");
    }
    assert!(table.contains("ns/\\u{1b}[2Jgone"), "{table}");
    assert!(table.contains("n\\u{202e}1"), "{table}");
    // Other text, accents included, is left as it is.
    assert_eq!(escape_for_terminal("é ünï\nx"), "é ünï\nx");
}

/// A report of `evictions` and `not_chosen` rows alone.
fn rows_only(evictions: Vec<EvictionRow>, not_chosen: Vec<NotChosenRow>) -> Report {
    Report {
        evictions,
        nodes: Vec::new(),
        notes: Vec::new(),
        not_chosen,
        findings: Default::default(),
        read: None,
        thresholds: Vec::new(),
    }
}

fn eviction(pod: &str, node: &str, reason: &str) -> EvictionRow {
    EvictionRow {
        mechanism: "evict".into(),
        pod: pod.into(),
        node: node.into(),
        profile: "p".into(),
        plugin: "PodLifeTime".into(),
        reason: reason.into(),
        destination: None,
        alternatives: Vec::new(),
        gang: None,
        budgets: Vec::new(),
        result: None,
        landed: None,
    }
}

#[test]
fn a_cell_wider_than_a_format_width_is_cut_not_a_panic() {
    // nodeFit's why-not over 2,000 nodes with a taint each: 146,000 characters, more
    // than a `{:<w$}` width may be (16 bits).
    let why = format!(
        "pod does not fit on any other node (nodeFit): 0/2000 nodes are available: {}",
        (0..2000)
            .map(|i| format!("1 node(s) had untolerated taint {{dedicated-{i:04}: team-{i:04}}}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert!(why.len() > 65_535, "{}", why.len());
    let report = rows_only(
        vec![eviction("ns/a", "n1", &why)],
        vec![NotChosenRow {
            pod: "ns/b".into(),
            node: Some("n1".into()),
            profile: "p".into(),
            plugin: "PodLifeTime".into(),
            reason: why.clone(),
        }],
    );
    let table = report.render(Format::Table);
    for line in table.lines() {
        assert!(line.chars().count() < 2 * CELL_MAX, "{line}");
    }
    let cut = format!("{}{ELLIPSIS}", &why[..CELL_MAX - 1]);
    assert_eq!(table.matches(&cut).count(), 2, "{table}");
    assert_eq!(
        table
            .matches("are cut, ending in \u{2026}; -o json")
            .count(),
        2,
        "a note under each table: {table}"
    );
    // The other formats carry the whole text.
    let json: Report = serde_json::from_str(&report.render(Format::Json)).unwrap();
    assert_eq!(json.evictions[0].reason, why);
    assert_eq!(json.not_chosen[0].reason, why);
    assert!(report
        .render(Format::Yaml)
        .contains(&why[why.len() - 200..]));
    // Through the writer every mode uses, too.
    let mut out = Vec::new();
    write(Input::Report(&report), Format::Table, &mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), table);
    // A cell at the limit is shown whole, one past it is cut.
    let at = "x".repeat(CELL_MAX);
    assert_eq!(table_cell(&at), (at.as_str().into(), CELL_MAX, false));
    let past = "x".repeat(CELL_MAX + 1);
    let (cell, width, cut) = table_cell(&past);
    assert_eq!(
        (cell.chars().count(), width, cut),
        (CELL_MAX, CELL_MAX, true)
    );
}

#[test]
fn cut_cells_keep_whole_characters_and_whole_escapes() {
    // Two-byte characters up to the cut, then a bidi override whose escape (`\u{202e}`,
    // 8 characters) does not fit in what is left: it goes whole, as the é's stay whole.
    let text = format!(
        "{}\u{202e}{}",
        "\u{e9}".repeat(CELL_MAX - 3),
        "x".repeat(50)
    );
    let (cell, width, cut) = table_cell(&text);
    assert!(cut);
    assert_eq!(cell, format!("{}{ELLIPSIS}", "\u{e9}".repeat(CELL_MAX - 3)));
    assert_eq!(width, CELL_MAX - 2);
    // Escapes before the cut are written whole and count their width.
    let text = format!("\u{1b}[2J{}", "y".repeat(2 * CELL_MAX));
    let (cell, width, _) = table_cell(&text);
    assert!(cell.starts_with("\\u{1b}[2Jyyy"), "{cell}");
    assert_eq!((cell.chars().count(), width), (CELL_MAX, CELL_MAX));
    assert!(!cell.contains('\u{1b}'));
    let (cell, width, cut) = table_cell("\u{0}\u{202e}\u{10ffff}a");
    assert_eq!(cell, "\\u{0}\\u{202e}\u{10ffff}a");
    assert_eq!((width, cut), (cell.chars().count(), false));
    // Columns line up by characters, not bytes: the next column starts at the same
    // character on each line.
    let report = rows_only(
        vec![
            eviction("ns/\u{e9}\u{e9}\u{e9}", "n1", "r"),
            eviction("ns/abc", "n2", "r"),
            eviction("ns/\u{202e}", "n3", "r"),
        ],
        Vec::new(),
    );
    let table = report.render(Format::Table);
    let at = |needle: &str| {
        let line = table.lines().find(|l| l.contains(needle)).unwrap();
        line[..line.find(needle).unwrap()].chars().count()
    };
    assert_eq!(at(" n1 "), at(" n2 "), "{table}");
    assert_eq!(at(" n1 "), at(" n3 "), "{table}");
    assert_eq!(at(" n1 ") + 1, at("NODE"), "{table}");
}

#[test]
fn alternatives_in_json_yaml_and_table() {
    let row = |alternatives: Vec<String>| EvictionRow {
        mechanism: "evict".into(),
        pod: "shop/web-1".into(),
        node: "n1".into(),
        profile: "p".into(),
        plugin: "LowNodeUtilization".into(),
        reason: "r".into(),
        destination: Some("n2".into()),
        alternatives,
        gang: None,
        budgets: Vec::new(),
        result: None,
        landed: None,
    };
    let report = |rows: Vec<EvictionRow>| Report {
        evictions: rows,
        nodes: Vec::new(),
        notes: Vec::new(),
        not_chosen: Vec::new(),
        findings: Default::default(),
        read: None,
        thresholds: Vec::new(),
    };
    let tied = report(vec![row(vec!["n3".into(), "n4".into()])]);
    let json: serde_json::Value = serde_json::from_str(&tied.render(Format::Json)).unwrap();
    assert_eq!(
        json["evictions"][0]["alternatives"],
        serde_json::json!(["n3", "n4"])
    );
    let yaml = tied.render(Format::Yaml);
    assert!(yaml.contains("alternatives:"), "{yaml}");
    assert!(yaml.contains("- n3") && yaml.contains("- n4"), "{yaml}");
    let table = tied.render(Format::Table);
    assert!(table.contains("n2 (or n3, n4)"), "{table}");
    // none: the field is absent and the cell is the destination alone
    let alone = report(vec![row(Vec::new())]);
    assert!(!alone.render(Format::Json).contains("alternatives"));
    assert!(!alone.render(Format::Yaml).contains("alternatives"));
    assert!(!alone.render(Format::Table).contains("(or"));
}

/// What plugins leave in the plan, as the report shows it.
mod plugin_findings {
    use crate::framework::FromArgs;
    use crate::framework::{Limits, PlanningState};
    use crate::plugins::default_evictor::DefaultEvictor;
    use crate::snapshot::builders::{node, pod, PodBuilder, T0};
    use crate::snapshot::{ClusterSnapshot, ConditionStatus, NodeId, Phase, SnapshotParts};
    use serde_json::json;

    const NOW: i64 = T0 + 3600;
    const GPU: &str = "nvidia.com/gpu";
    const GI: i64 = 1 << 30;

    fn evictor(args: serde_json::Value) -> DefaultEvictor {
        DefaultEvictor::from_json(&args).unwrap()
    }

    /// A pod unschedulable since T0, asking for two GPUs.
    fn pending(ns: &str, name: &str) -> PodBuilder {
        pod(ns, name)
            .phase(Phase::Pending)
            .started(None)
            .cpu(1000)
            .memory(2 * GI)
            .resource(GPU, 2)
            .owner("Job", name)
            .condition(
                "PodScheduled",
                ConditionStatus::False,
                Some("Unschedulable"),
                Some(T0),
            )
    }

    /// One busy node (a movable GPU pod and much cpu) and one spare node (one GPU free).
    fn one_busy_one_spare() -> SnapshotParts {
        let gpu_node = |name: &str| node(name).cpu(8000).memory(32 * GI).resource(GPU, 2);
        let pinned = |name: &str, on: &str, cpu: i64, gpus: i64| {
            let p = pod("infra", name).node(on).cpu(cpu).memory(GI).bare();
            if gpus > 0 {
                p.resource(GPU, gpus)
            } else {
                p
            }
        };
        let mut parts = SnapshotParts::default();
        parts.nodes.push(gpu_node("busy-1").build());
        parts.pods.push(
            pod("serve", "infer-1")
                .node("busy-1")
                .cpu(500)
                .memory(GI)
                .resource(GPU, 1)
                .build(),
        );
        parts.pods.push(pinned("cpu-1", "busy-1", 5000, 0).build());
        parts.nodes.push(gpu_node("spare-1").build());
        parts.pods.push(pinned("gpu-1", "spare-1", 100, 1).build());
        parts
    }

    #[test]
    fn refused_candidates_are_reported_as_not_chosen() {
        use crate::framework::Context;
        let snap = ClusterSnapshot::build(SnapshotParts {
            nodes: vec![node("n1").cpu(1000).build(), node("n2").cpu(1000).build()],
            pods: vec![
                pod("d", "big").node("n1").cpu(900).build(),
                pod("d", "small").node("n1").cpu(100).build(),
                pod("d", "x").node("n2").cpu(500).build(),
            ],
            ..Default::default()
        });
        let ev = evictor(json!({"nodeFit": true}));
        let mut state = PlanningState::new(&snap, Limits::default());
        let nodes = [NodeId::new(0), NodeId::new(1)];
        let id = |n: &str| snap.pod_id("d", n).unwrap();
        let mut cx = Context::new(&mut state, &ev, "p", "T", 0, &nodes, None);
        assert!(cx.pre_eviction_filter(id("big")).is_err());
        assert!(cx.pre_eviction_filter(id("small")).is_ok());
        cx.evict(id("small"), "r").unwrap();
        let notes = state.journal().not_chosen_notes();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert_eq!(
            notes[0].kind,
            crate::framework::NoteKind::NotChosen(id("big"))
        );
        assert!(notes[0].message.contains("1 Insufficient cpu"), "{notes:?}");
        // the report lists it apart from the notes, with the eviction's destination
        let out = state.into_output();
        let requested_after =
            crate::plan::AfterState::of_plan(&snap, out.requested, &out.evictions, &out.findings);
        let plan = crate::plan::EvictionPlan {
            evictions: out.evictions,
            nodes: nodes.to_vec(),
            requested_after,
            notes: out.notes,
            findings: out.findings,
            skips: out.skips,
        };
        let report = crate::report::Report::new(&snap, &plan);
        assert!(report.notes.is_empty());
        assert_eq!(report.not_chosen.len(), 1);
        assert_eq!(report.not_chosen[0].pod, "d/big");
        assert_eq!(report.evictions[0].destination.as_deref(), Some("n2"));
        let json = report.render(crate::report::Format::Json);
        assert!(json.contains("\"notChosen\""), "{json}");
        assert!(json.contains("\"destination\": \"n2\""), "{json}");
        let table = report.render(crate::report::Format::Table);
        assert!(table.contains("DESTINATION") && table.contains("Candidates not chosen:"));
    }

    #[test]
    fn the_plan_report_lists_pending_units() {
        let mut parts = one_busy_one_spare();
        parts.pods.push(pending("ml", "train").build());
        parts
            .pods
            .push(pending("ml", "huge").resource(GPU, 8).build());
        let snap = ClusterSnapshot::build(parts);
        let text = "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: batch\n  plugins:\n    balance:\n      enabled: [MakeRoomForPendingPods]\n";
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.yaml");
        std::fs::write(&file, text).unwrap();
        let pipeline = crate::framework::Pipeline::load(&file, &crate::plugins::REGISTRY).unwrap();
        let plan = crate::plan::plan(&pipeline, &snap, NOW).unwrap();
        let report = crate::report::Report::new(&snap, &plan);
        let json: serde_json::Value =
            serde_json::from_str(&report.render(crate::report::Format::Json)).unwrap();
        assert_eq!(json["evictions"][0]["pod"], "serve/infer-1");
        assert_eq!(json["evictions"][0]["destination"], "spare-1");
        // same priority and age: in pod order
        assert_eq!(json["pending"][0]["pod"], "ml/huge");
        assert_eq!(json["pending"][0]["destination"], serde_json::Value::Null);
        assert_eq!(json["pending"][0]["madeRoomBy"], json!([]));
        let why = json["pending"][0]["reason"].as_str().unwrap();
        assert!(why.starts_with("0/2 nodes are available"), "{why}");
        assert_eq!(json["pending"][1]["pod"], "ml/train");
        assert_eq!(json["pending"][1]["destination"], "busy-1");
        assert_eq!(json["pending"][1]["madeRoomBy"], json!(["serve/infer-1"]));
        assert!(json["pending"][1].get("reason").is_none());
        let table = report.render(crate::report::Format::Table);
        assert!(table.contains("Pending pods and gangs:"), "{table}");
    }
}
/// A plugin that reports a finding of its own: the pending pod it found room for.
#[derive(Debug)]
struct FindsRoom;

impl crate::framework::Plugin for FindsRoom {
    fn name(&self) -> &'static str {
        "FindsRoom"
    }

    fn run(&self, cx: &mut crate::framework::Context<'_, '_>, nodes: &[crate::snapshot::NodeId]) {
        let pod = cx.snap().pod_id("ml", "waiting").unwrap();
        cx.report(crate::framework::PendingUnit {
            profile: String::new(),
            plugin: "",
            gang: None,
            pods: vec![pod],
            destinations: vec![Some(nodes[1])],
            made_room_by: Vec::new(),
            reason: None,
        });
    }
}

#[test]
fn a_finding_goes_from_the_plugin_through_the_plan_to_its_key_and_rows() {
    use crate::framework::PendingUnit;
    use crate::snapshot::builders::{node, pod};
    use crate::snapshot::{ClusterSnapshot, SnapshotParts};
    let snap = ClusterSnapshot::build(SnapshotParts {
        nodes: vec![node("n1").build(), node("n2").build()],
        pods: vec![pod("ml", "waiting").cpu(500).build()],
        ..Default::default()
    });
    let policy =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/removeduplicates.yaml");
    let mut pipeline = Pipeline::load(&policy, &crate::plugins::REGISTRY).unwrap();
    pipeline.profiles[0].deschedule.push(Box::new(FindsRoom));
    let profile = pipeline.profiles[0].name.clone();
    let plan = crate::plan::plan(&pipeline, &snap, 1_796_083_200).unwrap();
    // The plan carries it in its one collection, as the plugin's...
    let units = plan.findings.list::<PendingUnit, _>();
    assert_eq!(units.len(), 1);
    assert_eq!(
        (units[0].profile.as_str(), units[0].plugin),
        (profile.as_str(), "FindsRoom")
    );
    // ...the planner reads it back by type (a placed pending pod counts where it goes)...
    let n2 = snap.node_id("n2").unwrap().index();
    assert_eq!(plan.requested_after.predicted[n2].cpu, 500);
    // ...and every format shows it under its key.
    let report = Report::new(&snap, &plan);
    let json: serde_json::Value = serde_json::from_str(&report.render(Format::Json)).unwrap();
    assert_eq!(json["pending"][0]["pod"], "ml/waiting");
    assert_eq!(json["pending"][0]["destination"], "n2");
    let yaml = report.render(Format::Yaml);
    assert!(
        yaml.contains("pending:") && yaml.contains("ml/waiting"),
        "{yaml}"
    );
    let table = report.render(Format::Table);
    let rows: Vec<&str> = table
        .lines()
        .skip_while(|l| *l != "Pending pods and gangs:")
        .skip(2)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(
        rows,
        ["ml/waiting  n2           -             -"],
        "{table}"
    );
    let html = report.render(Format::Html);
    assert!(
        html.contains("\"pending\":[{\"pod\":\"ml/waiting\""),
        "{html}"
    );
    assert!(html.contains("<section id=\"pending\" hidden>"));
    // Read back, the report is the same.
    let back: Report = serde_json::from_value(json).unwrap();
    assert_eq!(
        back,
        Report {
            thresholds: Vec::new(),
            ..report
        }
    );
}
