//! Per-table Markdown documentation.

use crate::Project;
use std::collections::BTreeMap;

/// One page per table, keyed by file name (`<table>.md`).
pub fn render(project: &Project) -> BTreeMap<String, String> {
    let _ = project;
    BTreeMap::new()
}
