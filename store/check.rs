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
