//! Payload types against canonical DAG-CBOR: key order, round trips, unknown content, optional
//! fields, and the typed BLOB column through SQLite.

use std::fmt::Debug;

use ipld_core::cid::Cid;
use seed_agents_store::cbor::{self, Cbor, CborError};
use seed_agents_store::payload::*;
use serde::de::DeserializeOwned;
use serde::Serialize;

// Helpers

fn s(value: &str) -> Ipld {
    Ipld::String(value.to_owned())
}

fn map<const N: usize>(entries: [(&str, Ipld); N]) -> Ipld {
    Ipld::Map(open(entries))
}

fn open<const N: usize>(entries: [(&str, Ipld); N]) -> OpenMap {
    entries
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect()
}

fn cid() -> Cid {
    "bafyreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"
        .parse()
        .unwrap()
}

/// Values of every DAG-CBOR kind, for unknown fields.
fn odd_values() -> OpenMap {
    open([
        ("zLink", Ipld::Link(cid())),
        ("zBytes", Ipld::Bytes(vec![0, 1, 255])),
        ("zFloat", Ipld::Float(2.5)),
        ("zNegative", Ipld::Integer(-300)),
        ("zBig", Ipld::Integer(u64::MAX.into())),
        ("zNull", Ipld::Null),
        ("zList", Ipld::List(vec![Ipld::Bool(true), s("x")])),
        (
            "zNested",
            map([("bb", Ipld::Integer(1)), ("a", Ipld::Integer(2))]),
        ),
    ])
}

/// Encodes `value`, decodes it back, checks both agree, and checks that re-encoding the decoded
/// value gives the same bytes. Returns the bytes.
fn round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(value: &T) -> Vec<u8> {
    let bytes = cbor::to_vec(value).unwrap();
    let decoded: T = cbor::from_slice(&bytes).unwrap();
    assert_eq!(&decoded, value);
    assert_eq!(cbor::to_vec(&decoded).unwrap(), bytes, "{value:?}");
    // The bytes are canonical by an independent reading: the strict decoder accepts them.
    cbor::from_slice::<Ipld>(&bytes).unwrap();
    bytes
}

/// Encodes an untyped value, decodes the bytes as a `T`, and checks that re-encoding the `T`
/// reproduces the bytes exactly. Returns the decoded value.
fn survives<T: Serialize + DeserializeOwned + Debug>(value: &Ipld) -> T {
    let bytes = cbor::to_vec(value).unwrap();
    let decoded: T = cbor::from_slice(&bytes).unwrap();
    assert_eq!(
        cbor::to_vec(&decoded).unwrap(),
        bytes,
        "{decoded:?} did not re-encode byte-for-byte"
    );
    decoded
}

fn step(id: &str, status: &str) -> RunPlanStep {
    RunPlanStep {
        id: id.into(),
        label: format!("step {id}"),
        status: status.into(),
        resolved_by: None,
        extra: OpenMap::new(),
    }
}

fn filter() -> ActivityFilter {
    ActivityFilter(open([("resource", s("hm://z6Mk/doc"))]))
}

mod blob;
mod key_order;
mod optional;
mod round_trips;
mod unknown;
