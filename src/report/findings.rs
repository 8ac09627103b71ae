//! The report's sections of plugin findings: each kind of [`Finding`] the report shows as a
//! section of its own is a row type implementing [`Section`] (the finding's rows, its table
//! and its part of the HTML page), registered once in `sections!`. Every format goes
//! through the sections in that order, under each finding's key (the JSON keys are a stable
//! contract), and names none of them.

use super::rows::round2;
use super::{PendingRow, TenantRow};
use crate::framework::{Finding, Findings, PendingUnit, TenantShare};
use crate::snapshot::{ClusterSnapshot, NodeId, PodId};
use serde::de::DeserializeOwned;
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::fmt::Write as _;

/// A kind of plugin finding as the report shows it, a row per finding: in the JSON and
/// YAML as a list under the finding's key (left out when empty), in the table and on the
/// HTML page as a section of its own (none when empty).
pub(super) trait Section:
    Serialize + DeserializeOwned + Clone + PartialEq + std::fmt::Debug + Send + Sync
{
    /// The finding shown.
    type Finding: Finding;
    /// The rows of the findings kept.
    fn rows(snap: &ClusterSnapshot, kept: &<Self::Finding as Finding>::Kept) -> Vec<Self>;
    /// The table report's section of `rows` (not empty).
    fn table(rows: &[Self], out: &mut String);
    /// The page's section (hidden until the script shows it).
    const HTML: &'static str;
    /// The page's script that draws the section from `data.<key>` (with the page's
    /// `SmallTable`, `el`, `visible`, `resources`, `ns` and `name`).
    const SCRIPT: &'static str;
}

/// Is told each section of a report, in order.
pub(super) trait Visit {
    type Error;
    fn section<S: Section>(&mut self, key: &'static str, rows: &[S]) -> Result<(), Self::Error>;
}

/// Declares the report's sections of plugin findings, in the order every format shows
/// them: `key: Row`, the key being the finding's (checked by a test) and the JSON key.
macro_rules! sections {
    ($($key:ident: $row:ty),* $(,)?) => {
        /// The report's sections of plugin findings, each a list of rows under its
        /// finding's key, left out when empty.
        #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
        pub struct Sections {
            $(
                #[serde(default, skip_serializing_if = "Vec::is_empty")]
                pub $key: Vec<$row>,
            )*
        }

        impl Sections {
            /// Each section's key and its finding's, in order.
            #[cfg(test)]
            const KEYS: &[(&str, &str)] = &[
                $((stringify!($key), <<$row as Section>::Finding as Finding>::KEY),)*
            ];

            /// The sections of a plan's findings.
            pub(super) fn of(snap: &ClusterSnapshot, findings: &Findings) -> Sections {
                Sections {
                    $(
                        $key: findings
                            .get::<<$row as Section>::Finding>()
                            .map_or_else(Vec::new, |kept| <$row as Section>::rows(snap, kept)),
                    )*
                }
            }

            /// Tells `v` each section, in order.
            pub(super) fn visit<V: Visit>(&self, v: &mut V) -> Result<(), V::Error> {
                $(v.section(stringify!($key), &self.$key)?;)*
                Ok(())
            }
        }
    };
}

sections! {
    tenants: TenantRow,
    pending: PendingRow,
}

impl Sections {
    /// How many rows the sections hold, together.
    pub(super) fn rows(&self) -> usize {
        struct Count(usize);
        impl Visit for Count {
            type Error = Infallible;
            fn section<S: Section>(
                &mut self,
                _: &'static str,
                rows: &[S],
            ) -> Result<(), Infallible> {
                self.0 += rows.len();
                Ok(())
            }
        }
        let mut count = Count(0);
        let Ok(()) = self.visit(&mut count);
        count.0
    }

    /// The table report's sections, in order.
    pub(super) fn table(&self, out: &mut String) {
        struct Table<'a>(&'a mut String);
        impl Visit for Table<'_> {
            type Error = Infallible;
            fn section<S: Section>(
                &mut self,
                _: &'static str,
                rows: &[S],
            ) -> Result<(), Infallible> {
                if !rows.is_empty() {
                    S::table(rows, self.0);
                }
                Ok(())
            }
        }
        let Ok(()) = self.visit(&mut Table(out));
    }

    /// The page's sections and the script that draws them, in order.
    pub(super) fn page() -> (String, String) {
        struct Page(String, String);
        impl Visit for Page {
            type Error = Infallible;
            fn section<S: Section>(&mut self, _: &'static str, _: &[S]) -> Result<(), Infallible> {
                self.0.push_str(S::HTML);
                self.1.push_str(S::SCRIPT);
                Ok(())
            }
        }
        let mut page = Page(String::new(), String::new());
        let Ok(()) = Sections::default().visit(&mut page);
        (page.0, page.1)
    }

    /// The sections as the page's data holds them: every key, with its rows (none too).
    pub(super) fn every_key(&self) -> EveryKey<'_> {
        EveryKey(self)
    }
}

/// The sections with every key, empty ones too (the page's data).
pub(super) struct EveryKey<'a>(&'a Sections);

impl Serialize for EveryKey<'_> {
    fn serialize<Se: serde::Serializer>(&self, s: Se) -> Result<Se::Ok, Se::Error> {
        struct Entries<M>(M);
        impl<M: SerializeMap> Visit for Entries<M> {
            type Error = M::Error;
            fn section<S: Section>(
                &mut self,
                key: &'static str,
                rows: &[S],
            ) -> Result<(), M::Error> {
                self.0.serialize_entry(key, rows)
            }
        }
        let mut entries = Entries(s.serialize_map(None)?);
        self.0.visit(&mut entries)?;
        entries.0.end()
    }
}

/// Writes a table of `rows` under `headers` (see the table report).
fn write_table<const N: usize>(
    out: &mut String,
    title: &str,
    headers: &[&str; N],
    rows: &[[String; N]],
) {
    let _ = writeln!(out);
    let _ = writeln!(out, "{title}");
    super::table::write_table(out, &headers[..], rows);
}

/// Each tenant's dominant share (DominantResourceFairness), in percent.
impl Section for TenantRow {
    type Finding = TenantShare;

    fn rows(_: &ClusterSnapshot, kept: &Vec<TenantShare>) -> Vec<TenantRow> {
        kept.iter()
            .map(|t| TenantRow {
                tenant: t.tenant.clone(),
                tenant_label: t.tenant_label.clone(),
                before: round2(100.0 * t.before),
                after: round2(100.0 * t.after),
                dominant_resource: t
                    .before_resource
                    .clone()
                    .or_else(|| t.after_resource.clone()),
            })
            .collect()
    }

    fn table(rows: &[TenantRow], out: &mut String) {
        let rows: Vec<[String; 3]> = rows
            .iter()
            .map(|t| {
                let name = match (&t.tenant_label, t.tenant.as_str()) {
                    (Some(l), "") => format!("(no {l} label)"),
                    (Some(l), v) => format!("{l}={v}"),
                    (None, v) => v.to_string(),
                };
                let share = if (t.before - t.after).abs() < 0.005 {
                    format!("{:.1}%", t.before)
                } else {
                    format!("{:.1}% -> {:.1}%", t.before, t.after)
                };
                [
                    name,
                    t.dominant_resource.clone().unwrap_or("-".into()),
                    share,
                ]
            })
            .collect();
        write_table(
            out,
            "Tenants (dominant share of the Ready nodes' allocatable, before -> after):",
            &["TENANT", "DOMINANT", "SHARE"],
            &rows,
        );
    }

    const HTML: &'static str = r#"<section id="tenants" hidden><h2>Tenants (dominant share, DRF)</h2>
  <table><thead><tr><th data-key="tenant">Tenant</th><th data-key="dominantResource">Dominant resource</th><th data-key="before">Share</th></tr></thead><tbody></tbody></table>
  <div class="more"></div>
</section>
"#;

    const SCRIPT: &'static str = r##"  var tenants = data.tenants || [];
  if (tenants.length) {
    document.getElementById("tenants").hidden = false;
    SmallTable("tenants", tenants.map(function (t) {
      var label = t.tenantLabel ? (t.tenant ? t.tenantLabel + "=" + t.tenant : "(no " + t.tenantLabel + " label)") : t.tenant;
      return {
        filter: { namespace: t.tenantLabel ? undefined : t.tenant },
        keys: { tenant: label, dominantResource: t.dominantResource || "", before: t.before },
        make: function () {
          return el("tr", { "data-tenant": label }, [el("td", { text: visible(label) }), el("td", { text: visible(t.dominantResource || "-") }),
            resources({ share: t.before }, { share: t.after }, ["share"])]);
        }
      };
    }), "before", true);
  }
"##;
}

/// The pending pods and gangs a plugin (MakeRoomForPendingPods) made room for, or could not.
impl Section for PendingRow {
    type Finding = PendingUnit;

    fn rows(snap: &ClusterSnapshot, kept: &Vec<PendingUnit>) -> Vec<PendingRow> {
        kept.iter().map(|u| pending_row(snap, u)).collect()
    }

    fn table(rows: &[PendingRow], out: &mut String) {
        let rows: Vec<[String; 4]> = rows
            .iter()
            .map(|p| {
                [
                    p.unit(),
                    p.where_to(),
                    if p.made_room_by.is_empty() {
                        "-".into()
                    } else {
                        p.made_room_by.join(",")
                    },
                    p.reason.clone().unwrap_or_else(|| "-".into()),
                ]
            })
            .collect();
        write_table(
            out,
            "Pending pods and gangs:",
            &["PENDING", "DESTINATION", "MADE ROOM BY", "WHY NOT"],
            &rows,
        );
    }

    const HTML: &'static str = r#"<section id="pending" hidden><h2>Pending pods and gangs</h2>
  <table><thead><tr><th data-key="unit">Pending</th><th data-key="namespace">Namespace</th><th data-key="destination">Destination</th><th data-key="madeRoomBy">Made room by</th><th data-key="reason">Why not</th></tr></thead><tbody></tbody></table>
  <div class="more"></div>
</section>
"#;

    const SCRIPT: &'static str = r##"  var pending = data.pending || [];
  if (pending.length) {
    document.getElementById("pending").hidden = false;
    SmallTable("pending", pending.map(function (u, i) {
      var unit = u.pod || ("group " + u.group);
      var key = u.pod || u.group;
      var gang = u.destinations || {};
      var nodes = u.destination ? [u.destination] : Object.keys(gang).map(function (p) { return gang[p]; });
      var where = u.destination || Object.keys(gang).map(function (p) { return name(p) + "=" + gang[p]; }).join(", ");
      return {
        filter: { nodes: nodes.length ? nodes : undefined, namespace: ns(key) },
        keys: { unit: unit, namespace: ns(key), destination: where, madeRoomBy: u.madeRoomBy.join(", "), reason: u.reason || "", order: i },
        make: function () {
          return el("tr", { "data-pending": key }, [el("td", { text: visible(u.pod ? name(u.pod) : "group " + name(u.group)) }),
            el("td", { text: visible(ns(key)) }), el("td", { text: visible(where || "(no node fits)") }),
            el("td", { text: visible(u.madeRoomBy.length ? u.madeRoomBy.join(", ") : "-") }),
            el("td", { "class": "reason", text: visible(u.reason || "-") })]);
        }
      };
    }), "order", false);
  }
"##;
}

/// A pending unit's row.
fn pending_row(snap: &ClusterSnapshot, u: &PendingUnit) -> PendingRow {
    let key = |p: PodId| snap.pod(p).key();
    let node = |n: NodeId| snap.node(n).name.to_string();
    let placed = u.reason.is_none() && u.destinations.iter().all(Option::is_some);
    let made_room_by = u.made_room_by.iter().map(|&p| key(p)).collect();
    match u.gang {
        Some(g) => {
            let gang = snap.gang(g);
            PendingRow {
                pod: None,
                group: Some(format!("{}/{}", gang.namespace, gang.name)),
                pods: u.pods.iter().map(|&p| key(p)).collect(),
                destination: (!placed).then_some(None),
                destinations: u
                    .pods
                    .iter()
                    .zip(&u.destinations)
                    .filter_map(|(&p, d)| d.map(|d| (key(p), node(d))))
                    .collect(),
                made_room_by,
                reason: u.reason.clone(),
            }
        }
        None => PendingRow {
            pod: u.pods.first().map(|&p| key(p)),
            group: None,
            pods: Vec::new(),
            destination: Some(u.destinations.first().copied().flatten().map(node)),
            destinations: BTreeMap::new(),
            made_room_by,
            reason: u.reason.clone(),
        },
    }
}

impl PendingRow {
    /// The unit's name: the pod, or `group ns/name`.
    fn unit(&self) -> String {
        match (&self.pod, &self.group) {
            (Some(p), _) => p.clone(),
            (None, Some(g)) => format!("group {g}"),
            (None, None) => "-".into(),
        }
    }

    /// Where the unit goes: the pod's node, or each gang pod's `name=node`; `-` when nowhere.
    fn where_to(&self) -> String {
        if let Some(Some(d)) = &self.destination {
            return d.clone();
        }
        if self.destinations.is_empty() {
            return "-".into();
        }
        self.destinations
            .iter()
            .map(|(p, n)| format!("{}={n}", p.rsplit('/').next().unwrap_or(p)))
            .collect::<Vec<_>>()
            .join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_section_is_under_its_findings_key() {
        assert!(!Sections::KEYS.is_empty());
        for (field, key) in Sections::KEYS {
            assert_eq!(field, key, "the section of finding {key} is named {field}");
        }
    }
}
