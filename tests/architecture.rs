//! The architecture's invariants (docs/architecture.md), checked by reading the sources.

use descheduler::plugins::REGISTRY;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file below `src/<dir>`, with its text.
fn sources(dir: &str) -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((path, text));
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join("src").join(dir), &mut out);
    assert!(!out.is_empty(), "no sources below src/{dir}");
    out
}

/// The places (`file:line: text`) in `src/<dirs>` that name any of `needles`.
fn uses(dirs: &[&str], needles: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for dir in dirs {
        for (path, text) in sources(dir) {
            for (i, line) in text.lines().enumerate() {
                if needles.iter().any(|n| line.contains(n)) {
                    let rel = path.strip_prefix(root()).unwrap().display().to_string();
                    found.push(format!("{rel}:{}: {}", i + 1, line.trim()));
                }
            }
        }
    }
    found
}

#[test]
fn the_framework_and_the_planner_name_no_plugin_and_no_live_code() {
    let found = uses(&["framework", "plan"], &["plugins::", "live::"]);
    assert!(
        found.is_empty(),
        "framework/ and plan/ know plugins only through their contracts and the registry \
         passed in, and never reach live code:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_pure_rooms_use_no_orchestration() {
    let found = uses(
        &["framework", "plan", "plugins", "sim", "snapshot", "policy"],
        &["app::", "cli::", "live::"],
    );
    assert!(
        found.is_empty(),
        "the planner and its model know nothing of how they are run: no file of framework/, \
         plan/, plugins/, sim/, snapshot/ or policy/ names app::, cli:: or live::\n{}",
        found.join("\n")
    );
}

#[test]
fn the_command_line_only_chooses_a_mode() {
    let cli = std::fs::read_to_string(root().join("src/cli.rs")).unwrap();
    let found: Vec<String> = cli
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            [
                "plan::",
                "snapshot::",
                "usage::",
                "report::write",
                "run_cycle",
            ]
            .iter()
            .any(|n| l.contains(n))
        })
        .map(|(i, l)| format!("src/cli.rs:{}: {}", i + 1, l.trim()))
        .collect();
    assert!(
        found.is_empty(),
        "src/cli.rs turns flags into a mode of app; reading the cluster, planning, reporting \
         and acting are app's:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_planner_performs_no_io_and_reads_no_clock() {
    let found = uses(
        &["framework", "plan", "plugins", "sim"],
        &[
            "std::fs",
            "std::net",
            "std::env",
            "std::process",
            "tokio",
            "reqwest",
            "hyper",
            "kube::",
            "SystemTime",
            "Instant",
            "Utc::now",
        ],
    );
    assert!(
        found.is_empty(),
        "planning is a pure function of (policy, snapshot, now):\n{}",
        found.join("\n")
    );
}

#[test]
fn only_live_and_the_usage_adapters_use_the_kubernetes_client() {
    let outside: Vec<String> = [
        "app",
        "framework",
        "plan",
        "plugins",
        "sim",
        "policy",
        "snapshot",
    ]
    .iter()
    .flat_map(|d| uses(&[d], &["kube::", "use kube", "kube_runtime"]))
    .collect();
    let mut top = Vec::new();
    for entry in std::fs::read_dir(root().join("src")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            if text.contains("kube::") || text.contains("use kube") {
                top.push(path.display().to_string());
            }
        }
    }
    assert!(
        outside.is_empty() && top.is_empty(),
        "the API server is reached from src/live and src/usage only:\n{}\n{}",
        outside.join("\n"),
        top.join("\n")
    );
}

/// The plugin rows of the compatibility table (docs/compatibility.md): (name, extension points).
fn compatibility_table_plugins() -> Vec<(String, Vec<String>)> {
    let doc = std::fs::read_to_string(root().join("docs/compatibility.md")).unwrap();
    let mut lines = doc
        .lines()
        .skip_while(|l| !l.starts_with("| upstream | extension point | args |"));
    assert!(
        lines.next().is_some(),
        "docs/compatibility.md has its plugin table"
    );
    lines
        .skip(1) // the |---| row
        .take_while(|l| l.starts_with('|'))
        .filter_map(|row| {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let name = cells.get(1)?;
            let is_plugin = !name.is_empty()
                && name.chars().next().unwrap().is_ascii_uppercase()
                && name.chars().all(|c| c.is_ascii_alphanumeric());
            is_plugin.then(|| {
                let points = cells[2]
                    .split(',')
                    .map(|p| p.trim().to_ascii_lowercase())
                    .filter(|p| !p.is_empty())
                    .collect();
                (name.to_string(), points)
            })
        })
        .collect()
}

#[test]
fn the_compatibility_plugin_table_is_the_registry() {
    let mut table = compatibility_table_plugins();
    table.sort();
    let mut registry: Vec<(String, Vec<String>)> = REGISTRY
        .iter()
        .map(|p| {
            (
                p.name.to_string(),
                p.points.iter().map(|e| e.as_str().to_string()).collect(),
            )
        })
        .collect();
    registry.sort();
    assert_eq!(
        table, registry,
        "docs/compatibility.md's plugin table (name | extension points) must list exactly the \
         plugins of plugins::REGISTRY, with their extension points"
    );
}

#[test]
fn the_report_reads_the_plan_and_the_app_names_no_format() {
    // The report's rows come from the plan and the snapshot: not from the policy file, the
    // cluster or the cycle that made them.
    let needles = ["policy::", "live::", "app::"];
    let mut found = uses(&["report"], &needles);
    let parent = std::fs::read_to_string(root().join("src/report.rs")).unwrap();
    found.extend(
        parent
            .lines()
            .enumerate()
            .filter(|(_, l)| needles.iter().any(|n| l.contains(n)))
            .map(|(i, l)| format!("src/report.rs:{}: {}", i + 1, l.trim())),
    );
    // The app hands the report its input and the format asked for, and names none.
    found.extend(
        uses(
            &["app"],
            &[
                "Format::Json",
                "Format::Yaml",
                "Format::Table",
                "Format::Html",
            ],
        )
        .into_iter()
        .filter(|place| !place.contains("tests.rs:")),
    );
    assert!(
        found.is_empty(),
        "the report reads the plan (never the policy file), and report::write picks the \
         format's module:\n{}",
        found.join("\n")
    );
}
