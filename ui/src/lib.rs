//! No code: this crate holds the compile-fail and compile-pass suites of the checked-SQL macros
//! (`tests/ui.rs`), apart from the store's other tests so that their build stays small.
