//! Canonical DAG-CBOR.
