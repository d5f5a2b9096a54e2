//! Naming: how SQL names become Rust names (`snake_case` fields and modules, `PascalCase` types
//! and variants, raw identifiers for keywords) and how SQL identifiers are quoted.
//!
//! Invariant: one spelling rule for every consumer, so the emitter and the query macros always
//! agree on the name of a generated item.

use proc_macro2::{Ident, Span};
use quote::format_ident;

/// An SQL identifier in double quotes.
pub(crate) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Letters, digits and `_`, not starting with a digit.
pub(crate) fn is_plain_identifier(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `snake_case` of an SQL name: separators become `_`, a lower-to-upper step gains one.
pub(crate) fn snake_case(name: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for ch in name.chars() {
        if ch.is_ascii_alphanumeric() {
            if ch.is_ascii_uppercase() && prev_lower {
                out.push('_');
            }
            prev_lower = ch.is_ascii_lowercase() || ch.is_ascii_digit();
            out.push(ch.to_ascii_lowercase());
        } else {
            if !out.ends_with('_') {
                out.push('_');
            }
            prev_lower = false;
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// `PascalCase` of an SQL name or enum value: `title_source` -> `TitleSource`, `OWNER` ->
/// `Owner`, `budget-pause` -> `BudgetPause`; a mixed-case part keeps its inner capitals.
pub(crate) fn pascal_case(name: &str) -> String {
    let mut out = String::new();
    for part in name.split(|c: char| !c.is_ascii_alphanumeric()) {
        let mut chars = part.chars();
        let Some(first) = chars.next() else {
            continue;
        };
        out.push(first.to_ascii_uppercase());
        let rest: String = chars.collect();
        if part.chars().any(|c| c.is_ascii_lowercase()) {
            out.push_str(&rest);
        } else {
            out.push_str(&rest.to_ascii_lowercase());
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'V');
    }
    out
}

/// A Rust identifier for a snake-case name: raw for keywords, `_`-suffixed where even a raw
/// identifier is not allowed.
pub(crate) fn ident(name: &str) -> Ident {
    const KEYWORDS: &[&str] = &[
        "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "do",
        "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl", "in",
        "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref",
        "return", "static", "struct", "trait", "true", "try", "type", "typeof", "unsafe",
        "unsized", "use", "virtual", "where", "while", "yield",
    ];
    const NOT_RAW: &[&str] = &["self", "super", "crate", "_"];
    if NOT_RAW.contains(&name) {
        format_ident!("{}_", name)
    } else if KEYWORDS.contains(&name) {
        Ident::new_raw(name, Span::call_site())
    } else {
        format_ident!("{}", name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(pascal_case("status"), "Status");
        assert_eq!(pascal_case("title_source"), "TitleSource");
        assert_eq!(pascal_case("OWNER"), "Owner");
        assert_eq!(pascal_case("budget-pause"), "BudgetPause");
        assert_eq!(pascal_case("tool_call"), "ToolCall");
        assert_eq!(pascal_case("inProgress"), "InProgress");
        assert_eq!(pascal_case("1h"), "V1h");
        assert_eq!(snake_case("created_at"), "created_at");
        assert_eq!(snake_case("createdAt"), "created_at");
        assert_eq!(snake_case("my col"), "my_col");
        assert_eq!(ident("type").to_string(), "r#type");
        assert_eq!(ident("self").to_string(), "self_");
    }
}
