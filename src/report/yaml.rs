//! The YAML report: the same fields as the JSON ([`Report`]'s serde shape).

use super::Report;

pub(super) fn write(report: &Report, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let text = serde_saphyr::to_string(report).map_err(std::io::Error::other)?;
    out.write_all(text.as_bytes())
}
