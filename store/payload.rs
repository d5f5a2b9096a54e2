//! Payload types.
