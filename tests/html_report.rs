//! The HTML report (`-o html`) in a real browser: headless Chromium (Debian's package;
//! `scripts/install-chromium`) loads the page of the shipped example and of a 5,000-node
//! plan, runs its script, and the DOM it leaves is checked against the JSON report of the
//! same plan (evictions, before/after values, filters, paging). Screenshots are kept under
//! the target folder (`target/tmp/html-report/`) as test artifacts; the README's picture is
//! the example's.

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
