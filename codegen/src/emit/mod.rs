//! Emitters: typed Rust for the store ([`rust`]) and one Markdown page per table ([`docs`]).
//! Both are pure functions of a checked [`Project`](crate::Project); writing files is the caller's
//! business.

pub mod docs;
pub mod rust;
