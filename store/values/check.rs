//! The one vocabulary of argument checks: every domain operation words a bad argument through
//! these helpers, so one kind of mistake reads the same everywhere.
//!
//! Invariant: every check fails with [`Error::Invalid`] naming the argument by its snake_case
//! Rust name (the parameter, the request struct's field, or a dotted path into a passed value:
//! see [`Error::Invalid`]'s `field`) and saying what it must be; none writes or panics.

use crate::error::{Error, Result};

/// The [`Error::Invalid`] for `field`.
pub(crate) fn invalid(field: &'static str, reason: impl Into<String>) -> Error {
    Error::Invalid {
        field,
        reason: reason.into(),
    }
}

/// Checks that `value` is not empty (or only whitespace).
pub(crate) fn non_empty(field: &'static str, value: &str) -> Result<()> {
    if value.trim().is_empty() {
        return Err(invalid(field, "must not be empty"));
    }
    Ok(())
}

/// Checks that an optional `value`, when given, is not empty (or only whitespace).
pub(crate) fn non_empty_when_given(field: &'static str, value: Option<&str>) -> Result<()> {
    if value.is_some_and(|v| v.trim().is_empty()) {
        return Err(invalid(field, "must not be empty when given"));
    }
    Ok(())
}

/// Trims a name and checks it: not empty, at most `max` bytes. Returns the trimmed name.
pub(crate) fn name<'a>(field: &'static str, name: &'a str, max: usize) -> Result<&'a str> {
    let name = name.trim();
    if name.is_empty() {
        return Err(invalid(field, "must not be empty"));
    }
    if name.len() > max {
        return Err(invalid(field, format!("must be at most {max} bytes")));
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    //! The field-name rule, checked on the crate's own source: every string literal passed as a
    //! field name (to a function or closure whose first parameter is `field: &'static str`, or
    //! as the `field` of an `Error::Invalid` written out) is a snake_case Rust path.

    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};

    fn is_ident_char(c: char) -> bool {
        c.is_ascii_alphanumeric() || c == '_'
    }

    /// Every `.rs` file under `dir`, in path order.
    fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.expect("a readable directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// The names of the functions and of the closures (`let name = |field: ...`) in `text`
    /// whose first parameter is `field: &'static str`.
    fn field_helpers(text: &str) -> (BTreeSet<String>, BTreeSet<String>) {
        const PARAM: &str = "field: &'static str";
        let mut functions = BTreeSet::new();
        for (at, _) in text.match_indices("fn ") {
            if text[..at].ends_with(is_ident_char) {
                continue;
            }
            let rest = &text[at + 3..];
            let name: String = rest.chars().take_while(|c| is_ident_char(*c)).collect();
            let mut rest = &rest[name.len()..];
            if rest.starts_with('<') {
                let mut depth = 0;
                let end = rest
                    .char_indices()
                    .find(|(_, c)| {
                        match c {
                            '<' => depth += 1,
                            '>' => depth -= 1,
                            _ => {}
                        }
                        depth == 0
                    })
                    .map_or(rest.len(), |(i, _)| i + 1);
                rest = &rest[end..];
            }
            if let Some(params) = rest.strip_prefix('(') {
                if params.trim_start().starts_with(PARAM) {
                    functions.insert(name);
                }
            }
        }
        let mut closures = BTreeSet::new();
        for (at, _) in text.match_indices(&format!("|{PARAM}")) {
            let Some(before) = text[..at].trim_end().strip_suffix('=') else {
                continue;
            };
            let before = before.trim_end();
            let start = before
                .rfind(|c: char| !is_ident_char(c))
                .map_or(0, |i| i + 1);
            closures.insert(before[start..].to_owned());
        }
        (functions, closures)
    }

    /// The string literal opening `text` (after whitespace), if it opens with one.
    fn leading_literal(text: &str) -> Option<(usize, String)> {
        let skipped = text.len() - text.trim_start().len();
        let body = text[skipped..].strip_prefix('"')?;
        let end = body.find('"')?;
        Some((skipped, body[..end].to_owned()))
    }

    /// (line, literal) of every string literal `text` passes as a field name: the first
    /// argument of a call to one of `helpers` (not a method call), or the value of `field:`.
    fn field_literals(text: &str, helpers: &BTreeSet<String>) -> Vec<(usize, String)> {
        let line = |at: usize| text[..at].matches('\n').count() + 1;
        let mut found = Vec::new();
        for helper in helpers {
            for (at, _) in text.match_indices(&format!("{helper}(")) {
                if text[..at].ends_with(|c: char| is_ident_char(c) || c == '.') {
                    continue;
                }
                let args = at + helper.len() + 1;
                if let Some((skip, literal)) = leading_literal(&text[args..]) {
                    found.push((line(args + skip), literal));
                }
            }
        }
        // Spelled in two pieces so that this file's own text holds no `field` + colon here.
        let field = ["field", ":"].concat();
        for (at, _) in text.match_indices(&field) {
            if text[..at].ends_with(is_ident_char) {
                continue;
            }
            let value = at + field.len();
            if let Some((skip, literal)) = leading_literal(&text[value..]) {
                found.push((line(value + skip), literal));
            }
        }
        found.sort();
        found
    }

    /// Lowercase ASCII words of letters, digits and `_`, joined by `.`.
    fn is_snake_path(name: &str) -> bool {
        name.split('.').all(|part| {
            part.starts_with(|c: char| c.is_ascii_lowercase())
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
    }

    #[test]
    fn every_field_name_is_a_snake_case_rust_path() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("store");
        let mut files = Vec::new();
        sources(&root, &mut files);
        let texts: Vec<(PathBuf, String)> = files
            .into_iter()
            .map(|path| {
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                (path, text)
            })
            .collect();
        let functions: BTreeSet<String> = texts
            .iter()
            .flat_map(|(_, text)| field_helpers(text).0)
            .collect();
        for helper in [
            "invalid",
            "non_empty",
            "non_empty_when_given",
            "name",
            "check_id",
        ] {
            assert!(
                functions.contains(helper),
                "{helper} not found: {functions:?}"
            );
        }
        let mut sites = 0;
        let mut wrong = Vec::new();
        for (path, text) in &texts {
            let mut helpers = functions.clone();
            helpers.extend(field_helpers(text).1);
            for (line, literal) in field_literals(text, &helpers) {
                sites += 1;
                if !is_snake_path(&literal) {
                    wrong.push(format!("{}:{line}: {literal:?}", path.display()));
                }
            }
        }
        assert!(
            wrong.is_empty(),
            "field names must be snake_case Rust paths (see Error::Invalid):\n{}",
            wrong.join("\n")
        );
        // The crate named fields at 94 places when this was written: far fewer found means the
        // scan stopped seeing them, not that they went away.
        assert!(sites >= 80, "only {sites} field names found");
    }

    #[test]
    fn the_scan_sees_every_shape_of_site() {
        // FIELD stands for the parameter so that the real scan of this file finds no helper here.
        let text = "pub(crate) fn check<'a>(FIELD, v: &'a str) {}\n\
                    fn other(x: u8, FIELD) {}\n\
                    let mut once = |FIELD, h: &str| {};\n\
                    check(\"a\", v);\n\
                    crate::x::check(\n    \"b.c\",\n    v,\n);\n\
                    once(\"dUp\", h);\n\
                    other(1, \"skipped\");\n\
                    recheck(\"not_a_call_of_check\");\n\
                    it.check(\"a_method\");\n\
                    Error::Invalid { field: \"eFf\", reason };\n\
                    Error::Invalid { field, reason };\n"
            .replace("FIELD", "field: &'static str");
        let (functions, closures) = field_helpers(&text);
        assert_eq!(functions, BTreeSet::from(["check".to_owned()]));
        assert_eq!(closures, BTreeSet::from(["once".to_owned()]));
        let helpers = functions.union(&closures).cloned().collect();
        let found = field_literals(&text, &helpers);
        assert_eq!(
            found,
            [
                (4, "a".to_owned()),
                (6, "b.c".to_owned()),
                (9, "dUp".to_owned()),
                (13, "eFf".to_owned())
            ]
        );
        assert!(is_snake_path("source.schedule.interval_ms"));
        for bad in ["dUp", "eFf", "", "a..b", ".a", "_a", "1a", "a-b"] {
            assert!(!is_snake_path(bad), "{bad:?}");
        }
    }
}
