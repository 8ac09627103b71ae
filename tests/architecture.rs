//! The architecture's invariants (docs/architecture.md), checked by reading the sources.

use descheduler::plugins::REGISTRY;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The source folders of the workspace: the binary crate's and each library crate's, all
/// holding modules under the paths the binary re-exports them at.
const SOURCE_ROOTS: [&str; 4] = [
    "src",
    "crates/model/src",
    "crates/ingest/src",
    "crates/planner/src",
];

/// Every `.rs` file below `<root>/<dir>` for each source root that has it, with its text
/// (`snapshot` is the model's and ingestion's; `""` is every file of the workspace).
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
    for src in SOURCE_ROOTS {
        let folder = root().join(src).join(dir);
        if folder.is_dir() {
            walk(&folder, &mut out);
        } else if !dir.is_empty() && folder.with_extension("rs").is_file() {
            let path = folder.with_extension("rs");
            let text = std::fs::read_to_string(&path).unwrap();
            out.push((path, text));
        }
    }
    assert!(!out.is_empty(), "no sources for the room {dir}");
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
    for entry in SOURCE_ROOTS
        .iter()
        .flat_map(|src| std::fs::read_dir(root().join(src)).unwrap())
    {
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

/// The production text of a source file: without comment lines and without an inline
/// `#[cfg(test)] mod tests { ... }` at its end; None for a file of tests.
fn production_text(path: &Path, text: &str) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    if name == "tests.rs" || name.ends_with("_tests.rs") {
        return None;
    }
    let text = match text.find("#[cfg(test)]\nmod tests {") {
        Some(i) => &text[..i],
        None => text,
    };
    Some(
        text.lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// The module path of a file below a source root (`sim::placement` for
/// crates/planner/src/sim/placement.rs, `framework` for crates/planner/src/framework/mod.rs):
/// each library crate's modules keep the path the binary re-exports them at.
fn module_of(path: &Path) -> Vec<String> {
    let rel = SOURCE_ROOTS
        .iter()
        .find_map(|src| path.strip_prefix(root().join(src)).ok())
        .unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_str().unwrap().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The module paths a production text names: `crate::a::b::Item` and `super::x::Item`,
/// with `{a, b::c}` groups, each cut to the longest module of `known`.
fn modules_named(module: &[String], text: &str, known: &[Vec<String>]) -> Vec<Vec<String>> {
    let ident = |s: &str| -> Vec<String> {
        let mut out = Vec::new();
        for seg in s.split("::") {
            let id: String = seg
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if id.is_empty() {
                break;
            }
            let whole = id.len() == seg.len();
            out.push(id);
            if !whole {
                break;
            }
        }
        out
    };
    let longest = |path: Vec<String>| -> Option<Vec<String>> {
        (0..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|p| known.contains(p))
    };
    let mut found = Vec::new();
    for (prefix, base) in [
        ("crate::", Vec::new()),
        // `super` of a/b.rs, as of a/b/mod.rs, is a.
        ("super::", module[..module.len().saturating_sub(1)].to_vec()),
    ] {
        let mut rest = text;
        while let Some(i) = rest.find(prefix) {
            let before = rest[..i].chars().last();
            rest = &rest[i + prefix.len()..];
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let tails: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                group[..end].split(',').map(str::trim).collect()
            } else {
                vec![rest]
            };
            for tail in tails {
                let mut path = base.clone();
                path.extend(ident(tail));
                if let Some(m) = longest(path) {
                    found.push(m);
                }
            }
        }
    }
    found
}

#[test]
fn modules_import_one_way() {
    // Every production module and what it names of the others, leaving out a module's own
    // ancestors and descendants (a parent declares its children; a child reads its parent's
    // model): two rooms, or two files of one room, never name each other in a circle.
    let files: Vec<(Vec<String>, String)> = sources("")
        .into_iter()
        .filter(|(p, _)| p.file_name().is_some_and(|n| n != "main.rs"))
        .filter_map(|(p, t)| production_text(&p, &t).map(|t| (module_of(&p), t)))
        .collect();
    let known: Vec<Vec<String>> = files.iter().map(|(m, _)| m.clone()).collect();
    let related = |a: &[String], b: &[String]| a.starts_with(b) || b.starts_with(a);
    let mut edges: std::collections::BTreeMap<
        Vec<String>,
        std::collections::BTreeSet<Vec<String>>,
    > = Default::default();
    for (m, text) in &files {
        for named in modules_named(m, text, &known) {
            if !related(m, &named) {
                edges.entry(m.clone()).or_default().insert(named);
            }
        }
    }
    // A cycle: an edge a -> b where b reaches a.
    let reaches = |from: &Vec<String>, to: &Vec<String>| {
        let mut seen = std::collections::BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(n) = stack.pop() {
            if &n == to {
                return true;
            }
            if seen.insert(n.clone()) {
                stack.extend(edges.get(&n).into_iter().flatten().cloned());
            }
        }
        false
    };
    let show = |m: &Vec<String>| format!("crate::{}", m.join("::"));
    let mut cycles = Vec::new();
    for (a, bs) in &edges {
        for b in bs {
            if reaches(b, a) {
                cycles.push(format!("{} -> {}", show(a), show(b)));
            }
        }
    }
    assert!(
        edges.len() > 20,
        "the module graph was not read: {} modules with imports",
        edges.len()
    );
    assert!(
        cycles.is_empty(),
        "modules that name each other in a circle (an edge whose target reaches back):\n{}",
        cycles.join("\n")
    );
}

/// The workspace's packages and their folders.
const MEMBERS: [(&str, &str); 4] = [
    ("descheduler", "."),
    ("descheduler-model", "crates/model"),
    ("descheduler-ingest", "crates/ingest"),
    ("descheduler-planner", "crates/planner"),
];

/// The names a Cargo.toml lists under `[dependencies]` (not dev- or build-dependencies).
fn normal_dependencies(manifest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == "[dependencies]";
        } else if inside && !line.is_empty() && !line.starts_with('#') {
            if let Some((name, _)) = line.split_once('=') {
                out.push(name.trim().to_string());
            }
        }
    }
    out
}

/// The packages `package` builds on, transitively: a workspace member's `[dependencies]`
/// from its Cargo.toml (its dev-dependencies build its tests only), every other package's
/// as Cargo.lock records them.
fn locked_dependencies(package: &str) -> std::collections::BTreeSet<String> {
    let lock = std::fs::read_to_string(root().join("Cargo.lock")).unwrap();
    let mut deps: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for block in lock.split("[[package]]").skip(1) {
        let name = block
            .lines()
            .find_map(|l| l.strip_prefix("name = "))
            .map(|n| n.trim_matches('"').to_string())
            .unwrap();
        let list = block
            .split_once("dependencies = [")
            .map(|(_, rest)| rest.split(']').next().unwrap_or(""))
            .unwrap_or("");
        let names = list
            .split(',')
            .filter_map(|d| d.trim().trim_matches('"').split(' ').next())
            .filter(|d| !d.is_empty())
            .map(str::to_string)
            .collect();
        deps.entry(name).or_default().extend::<Vec<String>>(names);
    }
    for (member, folder) in MEMBERS {
        let manifest = std::fs::read_to_string(root().join(folder).join("Cargo.toml")).unwrap();
        let names = normal_dependencies(&manifest);
        assert!(
            !names.is_empty(),
            "{folder}/Cargo.toml lists no dependencies"
        );
        deps.insert(member.to_string(), names);
    }
    assert!(deps.contains_key(package), "{package} is not in Cargo.lock");
    let mut seen = std::collections::BTreeSet::new();
    let mut stack = vec![package.to_string()];
    while let Some(p) = stack.pop() {
        if seen.insert(p.clone()) {
            stack.extend(deps.get(&p).into_iter().flatten().cloned());
        }
    }
    seen.remove(package);
    seen
}

#[test]
fn the_planner_crate_holds_no_runtime_client_or_http_crate() {
    let binary = locked_dependencies("descheduler");
    for needed in ["tokio", "kube", "hyper", "reqwest", "descheduler-planner"] {
        assert!(binary.contains(needed), "Cargo.lock was not read: {needed}");
    }
    for (crate_name, forbidden) in [
        (
            "descheduler-planner",
            &[
                "tokio",
                "kube",
                "kube-client",
                "hyper",
                "reqwest",
                "k8s-openapi",
                "axum",
                "governor",
            ][..],
        ),
        (
            "descheduler-model",
            &["tokio", "kube", "hyper", "reqwest", "descheduler-planner"][..],
        ),
        (
            "descheduler-ingest",
            &["tokio", "kube", "hyper", "reqwest", "descheduler-planner"][..],
        ),
    ] {
        let deps = locked_dependencies(crate_name);
        let found: Vec<&&str> = forbidden.iter().filter(|f| deps.contains(**f)).collect();
        assert!(
            found.is_empty(),
            "{crate_name} depends (in Cargo.lock, transitively) on {found:?}; the planner is \
             pure and the model and ingestion know nothing of the planner or the network"
        );
    }
}
