//! Row identifiers: the ids this crate creates and the check every id argument passes.
//!
//! Invariant: a stored id is never empty, padded with whitespace or longer than
//! [`MAX_ID_BYTES`].

use crate::error::Result;
use crate::values::check::invalid;

/// The longest account, signer or row id accepted, in bytes.
pub const MAX_ID_BYTES: usize = 256;

/// Checks an identifier argument: non-empty, no surrounding whitespace, at most
/// [`MAX_ID_BYTES`] bytes.
///
/// # Errors
/// [`crate::Error::Invalid`] naming `field`.
///
/// # Examples
/// ```
/// use seed_agents_store::ids::check_id;
///
/// assert!(check_id("agent_id", "agent-1").is_ok());
/// assert!(check_id("agent_id", " agent-1").is_err());
/// ```
pub fn check_id(field: &'static str, id: &str) -> Result<()> {
    let reason = if id.is_empty() {
        "must not be empty"
    } else if id.trim() != id {
        "must not start or end with whitespace"
    } else if id.len() > MAX_ID_BYTES {
        "must be at most 256 bytes"
    } else {
        return Ok(());
    };
    Err(invalid(field, reason))
}

/// A fresh random row id (a UUID v4 in its usual hyphenated text form), for the rows this crate
/// creates.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}
