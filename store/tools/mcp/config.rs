//! The checks of a server's name and configuration: its URL, transport and headers, plain,
//! secret and referenced.
//!
//! Invariant: a stored configuration names each header once (case-insensitively) across its
//! plain headers, its secret references and the secret values given with it, and no header
//! name or value can split or end the request header.

use crate::error::{Error, Result};
use crate::payload::McpServerConfig;
use crate::values::check::{invalid, non_empty_when_given};

use super::owned::owned_secret_name;
use super::{
    McpServerInput, MAX_HEADER_NAME_BYTES, MAX_HEADER_VALUE_BYTES, MAX_SERVER_NAME_LEN,
    MAX_URL_BYTES,
};

/// Checks a server name: `^[a-z][a-z0-9_-]{0,63}$`, without `__` and not ending in `_`, so
/// that `<server>__<tool>` names one server.
///
/// # Errors
/// [`Error::Invalid`] (`name`).
pub fn check_server_name(name: &str) -> Result<()> {
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
        && name.len() <= MAX_SERVER_NAME_LEN
        && !name.contains("__")
        && !name.ends_with('_');
    if ok {
        Ok(())
    } else {
        Err(invalid(
            "name",
            format!(
                "{name:?} must match ^[a-z][a-z0-9_-]{{0,63}}$, without `__` and not ending in `_`"
            ),
        ))
    }
}

/// An HTTP header name: an RFC 9110 token, at most [`MAX_HEADER_NAME_BYTES`].
fn check_header_name(field: &'static str, name: &str) -> Result<()> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(invalid(
            field,
            format!("{name:?} is not an HTTP header name"),
        ));
    }
    if name.len() > MAX_HEADER_NAME_BYTES {
        return Err(invalid(
            field,
            format!(
                "header name is {} bytes, more than the {MAX_HEADER_NAME_BYTES} allowed",
                name.len()
            ),
        ));
    }
    Ok(())
}

/// A header value: no CR, LF or NUL (which would split or end the request header).
fn check_header_value(field: &'static str, header: &str, value: &str, max: usize) -> Result<()> {
    if value.contains(['\r', '\n', '\0']) {
        return Err(invalid(
            field,
            format!("the value of {header:?} contains CR, LF or NUL"),
        ));
    }
    if value.len() > max {
        return Err(invalid(
            field,
            format!(
                "the value of {header:?} is {} bytes, more than the {max} allowed",
                value.len()
            ),
        ));
    }
    Ok(())
}

/// Checks an input and returns the config to store: `secretRefs` with the owned references of
/// `secret_headers` added.
pub(super) fn checked_config(name: &str, input: &McpServerInput) -> Result<McpServerConfig> {
    let config = &input.config;
    let url = &config.url;
    if !(url.starts_with("https://") || url.starts_with("http://")) || url.len() <= 8 {
        return Err(invalid("config.url", "must be an http:// or https:// URL"));
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid(
            "config.url",
            "must not contain whitespace or control characters",
        ));
    }
    if url.len() > MAX_URL_BYTES {
        return Err(invalid(
            "config.url",
            format!(
                "is {} bytes, more than the {MAX_URL_BYTES} allowed",
                url.len()
            ),
        ));
    }
    non_empty_when_given("config.transport", config.transport.as_deref())?;
    // Every header appears once, case-insensitively, across the three places it can be set.
    let mut seen: Vec<String> = Vec::new();
    let mut once = |field: &'static str, header: &str| -> Result<()> {
        let lower = header.to_ascii_lowercase();
        if seen.contains(&lower) {
            return Err(invalid(
                field,
                format!("the header {header:?} is given twice"),
            ));
        }
        seen.push(lower);
        Ok(())
    };
    for (header, value) in config.headers.iter().flatten() {
        check_header_name("config.headers", header)?;
        check_header_value("config.headers", header, value, MAX_HEADER_VALUE_BYTES)?;
        once("config.headers", header)?;
    }
    let mut refs = config.secret_refs.clone().unwrap_or_default();
    // A new value replaces the reference of its header, whatever case the reference used.
    for header in input.secret_headers.keys() {
        refs.retain(|h, _| !h.eq_ignore_ascii_case(header));
    }
    for (header, secret) in &refs {
        check_header_name("config.secret_refs", header)?;
        crate::secrets::secret_name(secret).map_err(|e| match e {
            Error::Invalid { reason, .. } => {
                invalid("config.secret_refs", format!("{header:?}: {reason}"))
            }
            other => other,
        })?;
        once("config.secret_refs", header)?;
    }
    for (header, value) in &input.secret_headers {
        check_header_name("secret_headers", header)?;
        check_header_value(
            "secret_headers",
            header,
            value,
            crate::secrets::MAX_VALUE_BYTES,
        )?;
        once("secret_headers", header)?;
        refs.insert(header.clone(), owned_secret_name(name, header));
    }
    Ok(McpServerConfig {
        secret_refs: if refs.is_empty() { None } else { Some(refs) },
        ..config.clone()
    })
}
