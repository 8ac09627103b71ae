//! The HTML report (`-o html`) in a real browser: headless Chromium (Debian's package;
//! `scripts/install-chromium`) loads the page of the shipped example and of a 5,000-node
//! plan, runs its script, and the DOM it leaves is checked against the JSON report of the
//! same plan (evictions, before/after values, filters, paging). Screenshots are kept under
//! the target folder (`target/tmp/html-report/`) as test artifacts; the user guide's picture
//! (docs/user-guide.md) is the example's.

use descheduler::report::{Format, Input};
use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_descheduler")
}

/// Where pages and screenshots are kept after the tests.
fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html-report");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Chromium: `$CHROMIUM`, else `chromium` on PATH.
fn chromium() -> String {
    let name = std::env::var("CHROMIUM").unwrap_or_else(|_| "chromium".into());
    let found = Command::new(&name).arg("--version").output();
    match found {
        Ok(out) if out.status.success() => name,
        _ => panic!(
            "headless Chromium is needed to check the HTML report: run scripts/install-chromium \
             (Debian's chromium package), or set CHROMIUM to a Chromium binary"
        ),
    }
}

/// Runs headless Chromium on `url` with `args` (at most two minutes), in a profile of its
/// own; returns its stdout.
fn browse(url: &str, args: &[&str]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new("timeout")
        .arg("120")
        .arg(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium {args:?} {url}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The DOM after the page's script ran.
fn dom(page: &Path, hash: &str) -> String {
    let url = format!("file://{}{hash}", page.display());
    let dom = browse(&url, &["--dump-dom"]);
    assert!(
        dom.contains("data-ready=\"true\""),
        "the page's script did not finish: {}",
        &dom[..dom.len().min(2000)]
    );
    dom
}

/// A screenshot of `page`, kept as `name`; checks it is a PNG of some substance.
fn screenshot(page: &Path, name: &str, height: u32) -> PathBuf {
    let png = artifacts().join(name);
    let _ = std::fs::remove_file(&png);
    browse(
        &format!("file://{}", page.display()),
        &[
            &format!("--screenshot={}", png.display()),
            &format!("--window-size=1280,{height}"),
        ],
    );
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    assert!(
        bytes.len() > 20_000,
        "a blank picture? {} bytes",
        bytes.len()
    );
    png
}

/// Runs the descheduler with `args` and `-o format`; its stdout.
fn report(args: &[&str], format: &str) -> Vec<u8> {
    let out = Command::new(bin())
        .args(args)
        .args(["-o", format])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A figure as the page prints it (JavaScript's `toFixed(1)`: halves away from zero).
fn fixed1(v: f64) -> String {
    format!("{:.1}%", (v * 10.0).round() / 10.0)
}

/// Text as it appears in serialized HTML.
fn html_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The table row of `attr="value"` in `dom` (its text up to `</tr>`).
fn row<'a>(dom: &'a str, attr: &str, value: &str) -> &'a str {
    let start = dom
        .find(&format!("{attr}=\"{value}\""))
        .unwrap_or_else(|| panic!("no row {attr}={value:?}"));
    let end = dom[start..].find("</tr>").unwrap() + start;
    &dom[start..end]
}

fn count(dom: &str, needle: &str) -> usize {
    dom.matches(needle).count()
}

/// The `<section id=...>` of `dom`.
fn section<'a>(dom: &'a str, id: &str) -> &'a str {
    let start = dom.find(&format!("<section id=\"{id}\"")).unwrap();
    let end = dom[start..].find("</section>").unwrap() + start;
    &dom[start..end]
}

const EXAMPLE: [&str; 6] = [
    "--policy-config-file",
    "policies/combined.yaml",
    "--snapshot",
    "examples/cluster-hotspot.yaml",
    "--now",
    "2026-12-01T00:00:00Z",
];

#[test]
fn the_example_page_shows_the_plan_in_a_browser() {
    let html = report(&EXAMPLE, "html");
    let json: serde_json::Value = serde_json::from_slice(&report(&EXAMPLE, "json")).unwrap();
    let text = String::from_utf8(html).unwrap();
    // Self-contained: nothing is fetched.
    for outside in ["http://", "https://", " src=", "<link", "@import"] {
        assert!(!text.contains(outside), "the page refers to {outside}");
    }
    let page = artifacts().join("example.html");
    std::fs::write(&page, &text).unwrap();
    let dom = dom(&page, "");

    let evictions = json["evictions"].as_array().unwrap();
    assert!(!evictions.is_empty(), "the example evicts: {json}");
    let shown = section(&dom, "evictions");
    assert_eq!(count(shown, "<tr data-pod="), evictions.len());
    for e in evictions {
        let pod = e["pod"].as_str().unwrap();
        let r = row(shown, "data-pod", pod);
        let (ns, name) = pod.split_once('/').unwrap();
        for cell in [
            name,
            ns,
            e["node"].as_str().unwrap(),
            e["plugin"].as_str().unwrap(),
        ] {
            assert!(
                r.contains(&format!(">{}<", html_text(cell))),
                "{cell} in {r}"
            );
        }
        assert!(
            r.contains(&html_text(e["reason"].as_str().unwrap())),
            "reason in {r}"
        );
        let destination = e["destination"].as_str().unwrap_or("(no node fits)");
        assert!(
            r.contains(&format!(">{destination}<")),
            "{destination} in {r}"
        );
    }
    // Each node's bars carry its before and after figures.
    let nodes = json["nodes"].as_array().unwrap();
    let table = section(&dom, "nodes");
    assert_eq!(count(table, "<tr data-node="), nodes.len());
    let mut moved = 0;
    for n in nodes {
        let r = row(table, "data-node", n["name"].as_str().unwrap());
        let (before, after) = (n["before"]["cpu"].as_f64(), n["after"]["cpu"].as_f64());
        let (Some(before), Some(after)) = (before, after) else {
            continue;
        };
        let want = if fixed1(before) == fixed1(after) {
            fixed1(before)
        } else {
            moved += 1;
            format!("{} \u{2192} {}", fixed1(before), fixed1(after))
        };
        assert!(r.contains(&want), "{want} in {r}");
    }
    assert!(moved >= 1, "some node's cpu changes");
    // The policy's LowNodeUtilization thresholds are drawn on the bars.
    assert!(count(table, "class=\"th low\"") >= nodes.len());
    assert!(count(table, "class=\"th high\"") >= nodes.len());
    // Candidates not chosen and notes, when the plan has them.
    let not_chosen = json["notChosen"].as_array().map_or(0, Vec::len);
    assert_eq!(
        count(section(&dom, "not-chosen"), "<tr data-pod="),
        not_chosen.min(100)
    );

    // Filtered by the address: only the evictions from or to one node stay.
    let from = evictions[0]["node"].as_str().unwrap();
    let filtered = dom_with_hash(&page, &format!("#node={from}"));
    let shown = section(&filtered, "evictions");
    let expected = evictions
        .iter()
        .filter(|e| e["node"] == from || e["destination"] == from)
        .count();
    assert_eq!(count(shown, "<tr data-pod="), expected);
    assert_eq!(count(section(&filtered, "nodes"), "<tr data-node="), 1);
    let plugin = evictions[0]["plugin"].as_str().unwrap();
    let by_plugin = dom_with_hash(&page, &format!("#plugin={plugin}"));
    assert_eq!(
        count(section(&by_plugin, "evictions"), "<tr data-pod="),
        evictions.iter().filter(|e| e["plugin"] == plugin).count()
    );

    let png = screenshot(&page, "example.png", 1400);
    eprintln!("screenshot: {}", png.display());

    // Printable: the overview prints to a PDF, without the page's controls.
    let pdf = artifacts().join("example.pdf");
    let _ = std::fs::remove_file(&pdf);
    browse(
        &format!("file://{}", page.display()),
        &[
            &format!("--print-to-pdf={}", pdf.display()),
            "--no-pdf-header-footer",
        ],
    );
    let bytes = std::fs::read(&pdf).unwrap();
    assert!(bytes.starts_with(b"%PDF-"), "not a PDF");
    assert!(bytes.len() > 10_000, "{} bytes", bytes.len());
}

/// `examples/surge/`: the move by surge says so beside its destination; the other rows of a
/// page (the example's) say nothing of it.
#[test]
fn a_move_by_surge_is_shown_as_one() {
    let args = [
        "--policy-config-file",
        "examples/surge/policy.yaml",
        "--snapshot",
        "examples/surge/cluster.yaml",
    ];
    let page = artifacts().join("surge.html");
    std::fs::write(&page, report(&args, "html")).unwrap();
    let dom = dom(&page, "");
    let shown = section(&dom, "evictions");
    let r = row(shown, "data-pod", "app/web-6d4b9c7f8-x7k2p");
    assert!(r.contains("(surge: new pod first)"), "{r}");
    let plain = artifacts().join("example-evictions-only.html");
    std::fs::write(&plain, report(&EXAMPLE, "html")).unwrap();
    let plain = dom_with_hash(&plain, "");
    let rows = section(&plain, "evictions");
    assert!(count(rows, "<tr data-pod=") > 0);
    assert_eq!(count(rows, "(surge: new pod first)"), 0);
}

/// Where a tie decides a node's after-state (examples/no-pointless-evictions: the first
/// replacement goes to cold-a or cold-b), the page gives the range, in text and as a band on
/// the bar, as the JSON's `afterRange` says; a node the tie does not touch has none.
#[test]
fn an_after_state_a_tie_decides_is_shown_as_a_range() {
    let args = [
        "--policy-config-file",
        "examples/no-pointless-evictions/policy.yaml",
        "--snapshot",
        "examples/no-pointless-evictions/cluster.yaml",
    ];
    let json: serde_json::Value = serde_json::from_slice(&report(&args, "json")).unwrap();
    let page = artifacts().join("after-range.html");
    std::fs::write(&page, report(&args, "html")).unwrap();
    let dom = dom(&page, "");
    let table = section(&dom, "nodes");
    let mut ranged = 0;
    for n in json["nodes"].as_array().unwrap() {
        let r = row(table, "data-node", n["name"].as_str().unwrap());
        let cpu = (
            n["before"]["cpu"].as_f64().unwrap(),
            n["after"]["cpu"].as_f64().unwrap(),
        );
        match n["afterRange"]["cpu"].as_array() {
            Some(range) => {
                ranged += 1;
                let (lo, hi) = (range[0].as_f64().unwrap(), range[1].as_f64().unwrap());
                let want = format!(
                    "{} \u{2192} {} ({}\u{2013}{})",
                    fixed1(cpu.0),
                    fixed1(cpu.1),
                    fixed1(lo),
                    fixed1(hi)
                );
                assert!(r.contains(&want), "{want} in {r}");
                assert!(r.contains("class=\"range\""), "a band in {r}");
            }
            None => assert!(!r.contains("class=\"range\""), "no band in {r}"),
        }
    }
    assert_eq!(ranged, 2, "cold-a and cold-b depend on the tie: {json}");
}

#[test]
fn tenants_shares_are_shown_when_a_profile_orders_by_drf() {
    // The example's policy with DominantResourceFairness ordering its candidates.
    let combined = std::fs::read_to_string("policies/combined.yaml").unwrap();
    let with_drf = combined.replacen(
        "    plugins:\n",
        "    plugins:\n      sort:\n        enabled: [DominantResourceFairness]\n",
        1,
    );
    assert_ne!(with_drf, combined);
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("drf.yaml");
    std::fs::write(&policy, with_drf).unwrap();
    let args = [
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--snapshot",
        "examples/cluster-hotspot.yaml",
        "--now",
        "2026-12-01T00:00:00Z",
    ];
    let json: serde_json::Value = serde_json::from_slice(&report(&args, "json")).unwrap();
    let tenants = json["tenants"].as_array().expect("tenants in the report");
    assert!(!tenants.is_empty());
    let page = artifacts().join("tenants.html");
    std::fs::write(&page, report(&args, "html")).unwrap();
    let dom = dom(&page, "");
    let shown = section(&dom, "tenants");
    assert!(!shown.contains(" hidden"), "the tenants section shows");
    assert_eq!(count(shown, "<tr data-tenant="), tenants.len());
    for t in tenants {
        let name = t["tenant"].as_str().unwrap();
        let r = row(shown, "data-tenant", name);
        let (before, after) = (t["before"].as_f64().unwrap(), t["after"].as_f64().unwrap());
        let want = if fixed1(before) == fixed1(after) {
            fixed1(before)
        } else {
            format!("{} \u{2192} {}", fixed1(before), fixed1(after))
        };
        assert!(r.contains(&want), "{want} in {r}");
    }
}

fn dom_with_hash(page: &Path, hash: &str) -> String {
    dom(page, hash)
}

#[test]
fn a_five_thousand_node_plan_opens_with_summaries_and_pages() {
    use descheduler::snapshot::synthetic::{write_list, Config};
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("cluster.json");
    write_list(
        &Config::new(5_000, 25_000, 3),
        std::io::BufWriter::new(std::fs::File::create(&cluster).unwrap()),
    )
    .unwrap();
    let args = [
        "--policy-config-file",
        "benches/scale-policy.yaml",
        "--snapshot",
        cluster.to_str().unwrap(),
        "--now",
        "2026-12-01T00:00:00Z",
    ];
    let json: serde_json::Value = serde_json::from_slice(&report(&args, "json")).unwrap();
    let page = artifacts().join("five-thousand-nodes.html");
    std::fs::write(&page, report(&args, "html")).unwrap();
    let dom = dom(&page, "");
    let nodes = json["nodes"].as_array().unwrap().len();
    let evictions = json["evictions"].as_array().unwrap().len();
    assert_eq!(json["read"]["nodes"], 5_000);
    assert!(nodes > 4_900, "{nodes} nodes in the plan");
    assert!(evictions > 100, "{evictions} evictions");
    // Summaries first: the counts, then a page of rows of each table, the rest on demand.
    assert!(
        dom.contains(&format!("id=\"card-evictions\"><b>{evictions}</b>")),
        "the evictions card"
    );
    assert!(dom.contains(&format!("id=\"card-nodes\"><b>{nodes}</b>")));
    let table = section(&dom, "nodes");
    assert_eq!(count(table, "<tr data-node="), 100);
    assert!(table.contains(&format!("Showing 100 of {nodes}")), "paging");
    let shown = section(&dom, "evictions");
    assert_eq!(count(shown, "<tr data-pod="), 100);
    assert!(shown.contains(&format!("Showing 100 of {evictions}")));
    // The nodes come most loaded first.
    let first_cpu = json["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["before"]["cpu"].as_f64())
        .fold(0.0, f64::max);
    let first_row = &table[table.find("<tr data-node=").unwrap()..];
    assert!(
        first_row[..first_row.find("</tr>").unwrap()].contains(&fixed1(first_cpu)),
        "the first node has the highest cpu ({first_cpu})"
    );
    screenshot(&page, "five-thousand-nodes.png", 1400);
}

/// Headless Chromium driven through the DevTools protocol on a pipe
/// (`--remote-debugging-pipe`: it reads commands on fd 3 and writes replies on fd 4, each
/// message ending in a NUL), to run script in a loaded page and read back what it returns.
struct Browser {
    child: std::process::Child,
    to: std::fs::File,
    from: std::io::BufReader<std::fs::File>,
    next: u64,
    session: String,
    _dirs: [tempfile::TempDir; 2],
}

impl Browser {
    /// Opens `url` in a new page.
    fn open(url: &str) -> Browser {
        let fifos = tempfile::tempdir().unwrap();
        let profile = tempfile::tempdir().unwrap();
        let (to, from) = (fifos.path().join("to"), fifos.path().join("from"));
        for f in [&to, &from] {
            let made = Command::new("mkfifo").arg(f).status().unwrap();
            assert!(made.success(), "mkfifo {}", f.display());
        }
        // The shell gives Chromium the two pipes as fds 3 and 4.
        let child = Command::new("sh")
            .arg("-c")
            .arg(r#"exec 3<"$1" 4>"$2"; shift 2; exec "$@""#)
            .arg("sh")
            .arg(&to)
            .arg(&from)
            .args(["timeout", "300"])
            .arg(chromium())
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--hide-scrollbars",
                "--window-size=1280,900",
                "--remote-debugging-pipe",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let to = std::fs::OpenOptions::new().write(true).open(&to).unwrap();
        let from = std::io::BufReader::new(std::fs::File::open(&from).unwrap());
        let mut b = Browser {
            child,
            to,
            from,
            next: 0,
            session: String::new(),
            _dirs: [fifos, profile],
        };
        let target = b.call("Target.createTarget", serde_json::json!({"url": url}));
        let attached = b.call(
            "Target.attachToTarget",
            serde_json::json!({"targetId": target["targetId"], "flatten": true}),
        );
        b.session = attached["sessionId"].as_str().unwrap().to_string();
        b
    }

    /// Sends `method` (to the page once attached) and returns its result.
    fn call(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        use std::io::{BufRead, Write};
        self.next += 1;
        let mut msg = serde_json::json!({"id": self.next, "method": method, "params": params});
        if !self.session.is_empty() {
            msg["sessionId"] = self.session.clone().into();
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).unwrap();
        loop {
            let mut reply = Vec::new();
            let n = self.from.read_until(0, &mut reply).unwrap();
            assert!(n > 0, "Chromium closed the pipe during {method}");
            reply.pop();
            let reply: serde_json::Value = serde_json::from_slice(&reply).unwrap();
            if reply["id"] == self.next {
                assert!(reply["error"].is_null(), "{method}: {reply}");
                return reply["result"].clone();
            }
        }
    }

    /// The value of `expression` in the page (a promise is awaited).
    fn eval(&mut self, expression: &str) -> serde_json::Value {
        let r = self.call(
            "Runtime.evaluate",
            serde_json::json!({"expression": expression, "awaitPromise": true,
                               "returnByValue": true}),
        );
        assert!(
            r["exceptionDetails"].is_null(),
            "{expression}: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }

    /// Waits (at most two minutes) until the page at `url` has drawn itself.
    fn wait_ready(&mut self, url: &str) {
        let check = format!(
            "location.href === {} && document.readyState === 'complete' && \
             document.body.getAttribute('data-ready') === 'true'",
            serde_json::Value::from(url)
        );
        let start = std::time::Instant::now();
        while self.eval(&check) != serde_json::Value::Bool(true) {
            assert!(start.elapsed().as_secs() < 120, "{url} did not draw itself");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A report as a 5,000-node cluster's plan with `evictions` evictions and 20,000
/// candidates not chosen: names, reasons and figures shaped as the planner writes them.
fn large_report(evictions: usize) -> descheduler::report::Report {
    use descheduler::report::{EvictionRow, NodeRow, NotChosenRow, Report};
    use std::collections::BTreeMap;
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let node = |i: usize| format!("ip-10-0-{}-{}", i / 250, i % 250);
    let nodes: Vec<NodeRow> = (0..5_000)
        .map(|i| {
            let mut before = BTreeMap::new();
            let mut after = BTreeMap::new();
            for (r, v) in [
                ("cpu", 80.0),
                ("memory", 60.0),
                ("pods", 40.0),
                ("ephemeral-storage", 5.0),
            ] {
                let b = ((i * 37 + r.len() * 11) % 1000) as f64 * v / 1000.0;
                before.insert(r.to_string(), (b * 100.0).round() / 100.0);
                after.insert(r.to_string(), (b * 70.0).round() / 100.0);
            }
            if i % 10 == 0 {
                before.insert("nvidia.com/gpu".into(), 25.0);
                after.insert("nvidia.com/gpu".into(), 12.5);
            }
            NodeRow {
                name: node(i),
                before,
                after,
                after_range: Default::default(),
                measured: None,
            }
        })
        .collect();
    let plugins = [
        "RemoveDuplicates",
        "RemovePodsViolatingTopologySpreadConstraint",
        "LowNodeUtilization",
    ];
    let rows: Vec<EvictionRow> = (0..evictions)
        .map(|i| {
            let (team, app) = (i % 40, i / 12);
            let owner = format!("team-{team:03}/app-{app:05}-{:09x}", app * 7919);
            let from = node(next(5_000));
            let plugin = plugins[next(3)];
            let reason = match plugin {
                "RemoveDuplicates" => format!(
                    "duplicate of ReplicaSet {owner}: {} on node {from}, at most 1 per node (ceil of 12 pods over 4807 nodes)",
                    2 + i % 5
                ),
                "LowNodeUtilization" => format!(
                    "node {from} is overutilized (cpu {}%, memory 41%, pods 12%)",
                    50 + i % 40
                ),
                _ => "topology spread: zone skew 3 exceeds maxSkew 1".to_string(),
            };
            EvictionRow { mechanism: "evict".into(),
                pod: format!("{owner}-{:05x}", i % 0xfffff),
                node: from,
                profile: "scale".into(),
                plugin: plugin.into(),
                reason,
                destination: (i % 9 != 0).then(|| node(next(5_000))),
                alternatives: if i % 4 == 0 {
                    vec![node(next(5_000)), node(next(5_000))]
                } else {
                    Vec::new()
                },
                gang: None,
                budgets: Vec::new(),
                result: None,
                landed: None,
            }
        })
        .collect();
    let not_chosen = (0..20_000)
        .map(|i| NotChosenRow {
            pod: format!("team-{:03}/db-{i:05}-0", i % 40),
            node: Some(node(next(5_000))),
            profile: "scale".into(),
            plugin: "RemoveDuplicates".into(),
            reason: format!(
                "blocked by PodDisruptionBudget team-{:03}/db-{:05}-pdb: no disruptions left",
                i % 40,
                i / 3
            ),
        })
        .collect();
    Report {
        evictions: rows,
        nodes,
        notes: Vec::new(),
        not_chosen,
        findings: Default::default(),
        read: None,
        thresholds: Vec::new(),
    }
}

/// The timings of a 150,000-eviction page in Chromium, in milliseconds: the first draw
/// (the page's script, from its start to the tables drawn: the data parsed, the first
/// pages of rows made), "Show all" on the evictions, a scroll to the middle, each keystroke typed into the node filter after it, a sort by pod
/// and clearing the filter (each until the page shows the result, its layout done).
#[test]
fn a_page_of_150_000_evictions_answers_each_action_within_a_second() {
    let report = large_report(150_000);
    let page = artifacts().join("150k-evictions.html");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&page).unwrap());
    descheduler::report::write(Input::Report(&report), Format::Html, &mut out).unwrap();
    drop(out);
    let size = std::fs::metadata(&page).unwrap().len();
    let url = format!("file://{}", page.display());
    let mut b = Browser::open(&url);
    b.wait_ready(&url);
    let figures = b.eval(
        r#"(async () => {
  const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  const settled = async () => {
    while (document.body.getAttribute("data-ready") !== "true") await new Promise(r => setTimeout(r, 2));
    void document.body.offsetHeight;
    await frame();
  };
  const time = async (action) => { const t = performance.now(); action(); await settled(); return performance.now() - t; };
  const nav = performance.getEntriesByType("navigation")[0];
  const out = { draw: performance.getEntriesByName("report-drawn")[0].duration, load: nav.loadEventEnd,
                fileRead: nav.responseEnd, keys: [] };
  const section = document.getElementById("evictions");
  const all = [...section.querySelectorAll(".more button")].find(b => b.textContent === "Show all");
  out.showAll = await time(() => all.click());
  out.scroll = await time(() => window.scrollTo(0, section.offsetTop + 1000000));
  out.scrolledRows = section.querySelectorAll("tbody tr[data-pod]").length;
  const input = document.getElementById("f-node");
  for (const c of "10-0-3") {
    out.keys.push(await time(() => { input.value += c; input.dispatchEvent(new Event("input")); }));
  }
  out.filtered = section.querySelector(".more").textContent;
  out.sort = await time(() => section.querySelector('th[data-key="pod"]').click());
  out.clear = await time(() => { input.value = ""; input.dispatchEvent(new Event("input")); });
  out.cleared = section.querySelector(".more").textContent;
  return out;
})()"#,
    );
    eprintln!(
        "150,000 evictions, page {:.1} MB: {figures}",
        size as f64 / 1e6
    );
    let ms = |v: &serde_json::Value| v.as_f64().unwrap();
    let mut each = vec![
        ("the first draw", ms(&figures["draw"])),
        ("show all", ms(&figures["showAll"])),
        ("scroll", ms(&figures["scroll"])),
        ("sort", ms(&figures["sort"])),
        ("clear the filter", ms(&figures["clear"])),
    ];
    for k in figures["keys"].as_array().unwrap() {
        each.push(("a keystroke", ms(k)));
    }
    for (what, t) in each {
        assert!(t < 1000.0, "{what} took {t:.0} ms: {figures}");
    }
    // The same report as JSON objects with their keys repeated made a page of 43 MB (286
    // bytes an eviction) that loaded in 4.5 s; "Show all" drew every row (91 s) and each
    // keystroke after it drew them again (132 s).
    assert!(size < 150 * 150_000, "{size} bytes");
    // Loading (reading and parsing the file, the first draw) is measured, not bounded here:
    // it follows the file's size and the machine.
    eprintln!("loaded in {:.0} ms", ms(&figures["load"]));
}

/// A hand-edited address with a part that does not decode (`50%`): the page still draws,
/// with the other parts applied (`ns` is the short name of `namespace`).
#[test]
fn a_malformed_address_part_is_left_out_and_the_rest_applies() {
    let json: serde_json::Value = serde_json::from_slice(&report(&EXAMPLE, "json")).unwrap();
    let page = artifacts().join("example-malformed-address.html");
    std::fs::write(&page, report(&EXAMPLE, "html")).unwrap();
    let evictions = json["evictions"].as_array().unwrap();
    let plugin = evictions[0]["plugin"].as_str().unwrap();
    let ns = evictions[0]["pod"]
        .as_str()
        .unwrap()
        .split('/')
        .next()
        .unwrap();
    for hash in [
        format!("#node=50%&ns={ns}&plugin={plugin}"),
        format!("#ns={ns}&%E0%A4%A=x&plugin={plugin}&node=%"),
    ] {
        let dom = dom(&page, &hash);
        let expected = evictions
            .iter()
            .filter(|e| {
                e["plugin"] == plugin && e["pod"].as_str().unwrap().starts_with(&format!("{ns}/"))
            })
            .count();
        assert!(expected > 0);
        assert_eq!(
            count(section(&dom, "evictions"), "<tr data-pod="),
            expected,
            "{hash}"
        );
        // the node filter is empty: every node shows
        assert_eq!(
            count(section(&dom, "nodes"), "<tr data-node="),
            json["nodes"].as_array().unwrap().len(),
            "{hash}"
        );
    }
}

/// Counts by node name are kept in maps: a node named `constructor` (a valid node name,
/// and a property every plain object has) counts as any other. `__proto__` is no valid
/// name of a node, namespace or label value.
#[test]
fn a_node_named_constructor_counts_as_any_other() {
    let example = std::fs::read_to_string("examples/cluster-hotspot.yaml").unwrap();
    assert!(example.contains("node-a1"));
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("constructor.yaml");
    std::fs::write(&cluster, example.replace("node-a1", "constructor")).unwrap();
    let args = [
        "--policy-config-file",
        "policies/combined.yaml",
        "--snapshot",
        cluster.to_str().unwrap(),
        "--now",
        "2026-12-01T00:00:00Z",
    ];
    let json: serde_json::Value = serde_json::from_slice(&report(&args, "json")).unwrap();
    let evictions = json["evictions"].as_array().unwrap();
    let from = evictions
        .iter()
        .filter(|e| e["node"] == "constructor")
        .count();
    let to = evictions
        .iter()
        .filter(|e| e["destination"] == "constructor")
        .count();
    assert!(from > 0, "the hot node is evicted from: {json}");
    let page = artifacts().join("constructor.html");
    std::fs::write(&page, report(&args, "html")).unwrap();
    let dom = dom(&page, "");
    let r = row(section(&dom, "nodes"), "data-node", "constructor");
    assert!(
        r.contains(&format!("<td>constructor</td><td>{from}</td><td>{to}</td>")),
        "{r}"
    );
    let sources: std::collections::BTreeSet<&str> = evictions
        .iter()
        .map(|e| e["node"].as_str().unwrap())
        .collect();
    assert!(
        dom.contains(&format!("id=\"card-sources\"><b>{}</b>", sources.len())),
        "the card of nodes evicted from"
    );
}

/// Characters that are invisible or reorder text (a bidi override, a zero-width space, an
/// escape) are shown as `\u{..}`, as the table output shows them, not rendered.
#[test]
fn hidden_characters_in_names_are_shown_visibly() {
    use descheduler::report::{EvictionRow, NotChosenRow, Report};
    let pod = "shop/web-\u{202e}gnp.exe\u{200b}\u{1b}[2J";
    let report = Report {
        evictions: vec![EvictionRow {
            mechanism: "evict".into(),
            pod: pod.into(),
            node: "node-\u{2066}a1".into(),
            profile: "default".into(),
            plugin: "PodLifeTime".into(),
            reason: "older than 1h\u{feff}".into(),
            destination: Some("node-b1".into()),
            alternatives: Vec::new(),
            gang: None,
            budgets: Vec::new(),
            result: None,
            landed: None,
        }],
        nodes: Vec::new(),
        notes: Vec::new(),
        not_chosen: vec![NotChosenRow {
            pod: "shop/api-\u{202d}1".into(),
            node: None,
            profile: "default".into(),
            plugin: "PodLifeTime".into(),
            reason: "r".into(),
        }],
        findings: Default::default(),
        read: None,
        thresholds: Vec::new(),
    };
    let page = artifacts().join("hidden-characters.html");
    let mut out = Vec::new();
    descheduler::report::write(Input::Report(&report), Format::Html, &mut out).unwrap();
    std::fs::write(&page, out).unwrap();
    let dom = dom(&page, "");
    let r = row(section(&dom, "evictions"), "data-pod", pod);
    // the cells, after the row's attributes
    let cells = &r[r.find('>').unwrap()..];
    for c in ['\u{202e}', '\u{200b}', '\u{1b}', '\u{2066}', '\u{feff}'] {
        assert!(!cells.contains(c), "{c:?} in {cells}");
    }
    assert!(
        cells.contains("<td>web-\\u{202e}gnp.exe\\u{200b}\\u{1b}[2J</td>"),
        "{cells}"
    );
    assert!(cells.contains("<td>node-\\u{2066}a1</td>"), "{cells}");
    assert!(cells.contains("older than 1h\\u{feff}"), "{cells}");
    let r = row(
        section(&dom, "not-chosen"),
        "data-pod",
        "shop/api-\u{202d}1",
    );
    assert!(r.contains("<td>api-\\u{202d}1</td>"), "{r}");
}
