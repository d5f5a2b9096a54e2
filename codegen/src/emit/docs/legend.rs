//! The annotation legend of the schema pages and the links from `@cbor(T)` to `T`'s documentation.
//!
//! Invariant: a page's legend lists exactly the annotation kinds its columns use, in a fixed
//! order, so a reader never meets an annotation the page does not explain.

use super::code;
use crate::annotations::ColumnKind;
use std::fmt::Write as _;

/// The rustdoc page of the module holding every `@cbor(T)` payload type (`T` itself or a
/// re-export of it).
pub const PAYLOAD_DOCS: &str =
    "https://docs.rs/seed-agents-store/latest/seed_agents_store/payload/";

/// One legend entry per annotation, in the order pages list them.
const LEGEND: [(Legend, &str); 4] = [
    (
        Legend::Timestamp,
        "`@timestamp`: an `INTEGER` of milliseconds since the Unix epoch.",
    ),
    (
        Legend::Bool,
        "`@bool`: an `INTEGER` holding 0 (false) or 1 (true).",
    ),
    (
        Legend::Enum,
        "`@enum(..)`: `TEXT` holding one of the listed values, a closed set.",
    ),
    (
        Legend::Cbor,
        "`@cbor(T)`: a `BLOB` holding the canonical DAG-CBOR encoding of the payload type `T`; \
         the annotation links to `T`'s documentation.",
    ),
];

/// The kinds of annotation, without their arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Legend {
    Timestamp,
    Bool,
    Enum,
    Cbor,
}

impl From<&ColumnKind> for Legend {
    fn from(kind: &ColumnKind) -> Self {
        match kind {
            ColumnKind::Timestamp => Legend::Timestamp,
            ColumnKind::Bool => Legend::Bool,
            ColumnKind::Enum(_) => Legend::Enum,
            ColumnKind::Cbor(_) => Legend::Cbor,
        }
    }
}

/// Where the documentation of payload type `ty` is: a rustdoc search on the payload module's
/// page. Codegen cannot tell a struct from an enum or a type alias (rustdoc names their pages
/// differently), and some types are re-exports; the search finds each of them by name.
pub fn payload_link(ty: &str) -> String {
    format!("{PAYLOAD_DOCS}?search={ty}")
}

/// A column's annotation cell: the annotation as written, `@cbor(T)` linked to `T`'s docs.
pub(super) fn annotation_cell(kind: &ColumnKind) -> String {
    match kind {
        ColumnKind::Cbor(ty) => format!("[{}]({})", code(&kind.describe()), payload_link(ty)),
        _ => code(&kind.describe()),
    }
}

/// The legend of `used` annotations (all of them when `None`); empty when none is used.
pub(super) fn legend(s: &mut String, used: Option<&[Legend]>) {
    let entries: Vec<&str> = LEGEND
        .iter()
        .filter(|(k, _)| used.is_none_or(|u| u.contains(k)))
        .map(|(_, text)| *text)
        .collect();
    if entries.is_empty() {
        return;
    }
    s.push_str("\n## Annotations\n\n");
    for e in entries {
        let _ = writeln!(s, "- {e}");
    }
}
