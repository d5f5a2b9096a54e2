//! Typed Rust for the store.

use crate::{Project, Result};
use std::collections::BTreeMap;

/// The generated module's source text.
pub fn render(project: &Project, runtime: &str, docs: &BTreeMap<String, String>) -> Result<String> {
    let _ = (project, runtime, docs);
    Ok(String::new())
}
