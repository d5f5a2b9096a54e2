//! The Log's events have a decoder of their own (the hot read of a replay); it must answer as
//! serde's derived decoder does, which defines what an event means. Differential properties over
//! generated events (typed fields of the right shape, of a wrong shape, `null`, unknown fields,
//! nested meta, unknown and missing types), their one-byte corruptions, and every event of the
//! TypeScript server's fixture Log.

use std::collections::BTreeMap;

use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use seed_agents_store::cbor::Cbor;
use seed_agents_store::payload::{Ipld, SessionEventPayload};

const CASES: u32 = 2_000;

/// The store's decoding (its own decoder for events, serde's for the rest) and serde's alone
/// agree: the same event, or both an error.
fn agree(bytes: &[u8]) -> Result<(), TestCaseError> {
    let store = Cbor::<SessionEventPayload>::from_bytes(bytes.to_vec()).decode();
    let serde = serde_ipld_dagcbor::from_slice::<SessionEventPayload>(bytes);
    match (store, serde) {
        (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
        (Err(_), Err(_)) => {}
        (a, b) => prop_assert!(false, "store {:?}, serde {:?}", a, b),
    }
    Ok(())
}

fn text() -> impl Strategy<Value = Ipld> {
    prop_oneof![
        proptest::sample::select(&["user", "assistant", "tool", "agent", "system", "x"][..])
            .prop_map(|s| Ipld::String(s.into())),
        ".{0,12}".prop_map(Ipld::String),
    ]
}

fn any_value() -> impl Strategy<Value = Ipld> {
    let leaf = prop_oneof![
        2 => Just(Ipld::Null),
        2 => any::<bool>().prop_map(Ipld::Bool),
        2 => any::<i64>().prop_map(|i| Ipld::Integer(i.into())),
        2 => any::<u64>().prop_map(|i| Ipld::Integer(i.into())),
        1 => (-1e6f64..1e6).prop_map(Ipld::Float),
        4 => text(),
        2 => vec(any::<u8>(), 0..8).prop_map(Ipld::Bytes),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Ipld::List),
            btree_map(".{0,6}", inner, 0..4).prop_map(Ipld::Map),
        ]
    })
}

/// A field's value: mostly the shape the field wants, sometimes `null` or anything.
fn field(shape: Ipld) -> impl Strategy<Value = Ipld> {
    prop_oneof![
        6 => Just(shape),
        1 => Just(Ipld::Null),
        1 => any_value(),
    ]
}

/// Each known event type, its required fields and its optional ones.
const KINDS: &[(&str, &[&str], &[&str])] = &[
    (
        "message",
        &["role", "content"],
        &[
            "toolCallId",
            "rawMarkdown",
            "blocks",
            "contextLines",
            "attachments",
            "actor",
            "meta",
        ],
    ),
    ("tool_call", &["id", "name", "input"], &["actor"]),
    (
        "tool_spawn",
        &["toolCallId", "name", "runId", "title"],
        &["sessionId", "actor"],
    ),
    (
        "tool_result",
        &["toolCallId", "name"],
        &["output", "error", "actor", "meta"],
    ),
    ("error", &["message"], &["actor"]),
];

/// Every field name of every type.
fn fields() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = KINDS
        .iter()
        .flat_map(|(_, required, optional)| required.iter().chain(optional.iter()).copied())
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

const META: &[&str] = &[
    "accountId",
    "signerId",
    "model",
    "provider",
    "usage",
    "durationMs",
    "reasoningLevel",
    "other",
];

/// The value a field of that name wants.
fn shaped(name: &'static str) -> BoxedStrategy<Ipld> {
    match name {
        "blocks" | "attachments" => vec(any_value(), 0..3).prop_map(Ipld::List).boxed(),
        "contextLines" => vec(text(), 0..3).prop_map(Ipld::List).boxed(),
        "input" | "output" | "other" => any_value().boxed(),
        "meta" => btree_map(proptest::sample::select(META), shaped_meta(), 0..5)
            .prop_map(|m| Ipld::Map(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()))
            .boxed(),
        _ => text().boxed(),
    }
}

fn shaped_meta() -> impl Strategy<Value = Ipld> {
    prop_oneof![
        3 => text(),
        1 => any::<u32>().prop_map(|n| Ipld::Integer(n.into())),
        1 => btree_map("[a-z]{1,6}", any::<u16>().prop_map(|n| Ipld::Integer(n.into())), 0..3)
            .prop_map(Ipld::Map),
        1 => any_value(),
    ]
}

/// A generated event: mostly a known type with its required fields (now and then one missing),
/// some of its optional ones, and a field of another type or an unknown one; otherwise an
/// unknown type, a `type` that is not a string, or none, with any fields.
fn event() -> impl Strategy<Value = Ipld> {
    let typed = proptest::sample::select(KINDS).prop_flat_map(|(kind, required, optional)| {
        let required: Vec<_> = required
            .iter()
            .map(|name| proptest::option::weighted(0.95, shaped_or_not(name)))
            .collect();
        let optional = proptest::sample::subsequence(optional, 0..=optional.len())
            .prop_flat_map(|names| names.into_iter().map(shaped_or_not).collect::<Vec<_>>());
        let others = vec(
            prop_oneof![
                proptest::sample::select(fields()).prop_flat_map(shaped_or_not),
                ("[a-z]{1,8}", any_value()),
            ],
            0..2,
        );
        (required, optional, others).prop_map(move |(required, optional, others)| {
            let mut map: BTreeMap<String, Ipld> = others.into_iter().collect();
            map.extend(required.into_iter().flatten());
            map.extend(optional);
            map.insert("type".into(), Ipld::String(kind.into()));
            Ipld::Map(map)
        })
    });
    let untyped = (
        prop_oneof![
            Just(Some(Ipld::String("compaction".into()))),
            Just(None),
            any_value().prop_map(Some),
        ],
        vec(
            proptest::sample::select(fields()).prop_flat_map(shaped_or_not),
            0..4,
        ),
    )
        .prop_map(|(kind, fields)| {
            let mut map: BTreeMap<String, Ipld> = fields.into_iter().collect();
            map.extend(kind.map(|kind| ("type".to_owned(), kind)));
            Ipld::Map(map)
        });
    prop_oneof![8 => typed, 1 => untyped]
}

fn shaped_or_not(name: &'static str) -> impl Strategy<Value = (String, Ipld)> {
    shaped(name)
        .prop_flat_map(field)
        .prop_map(move |value| (name.to_owned(), value))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn generated_events_decode_as_serde_decodes_them(value in event()) {
        let bytes = serde_ipld_dagcbor::to_vec(&value).unwrap();
        agree(&bytes)?;
    }

    #[test]
    fn corrupted_events_decode_as_serde_decodes_them(
        value in event(),
        at in any::<prop::sample::Index>(),
        mask in 1u8..=255,
    ) {
        let mut bytes = serde_ipld_dagcbor::to_vec(&value).unwrap();
        let i = at.index(bytes.len());
        bytes[i] ^= mask;
        agree(&bytes)?;
    }
}

#[derive(serde::Deserialize)]
struct Vector {
    #[serde(rename = "type")]
    type_name: String,
    hex: String,
}

/// Every event the TypeScript server's encoder wrote: the payload vectors and the fixture file's
/// Log.
#[test]
fn the_typescript_servers_events_decode_as_serde_decodes_them() {
    let vectors: Vec<Vector> =
        serde_json::from_str(include_str!("../fixtures/ts-payload-vectors.json")).unwrap();
    let mut events: Vec<Vec<u8>> = vectors
        .into_iter()
        .filter(|v| v.type_name == "SessionEventPayload")
        .map(|v| hex::decode(v.hex).unwrap())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("ts.sqlite");
    std::fs::copy("tests/fixtures/ts-server-v11.sqlite", &copy).unwrap();
    let conn = rusqlite::Connection::open(&copy).unwrap();
    let mut stmt = conn
        .prepare("SELECT event_cbor FROM session_events")
        .unwrap();
    events.extend(
        stmt.query_map([], |r| r.get::<_, Vec<u8>>(0))
            .unwrap()
            .map(Result::unwrap),
    );
    assert!(events.len() > 10, "{} events", events.len());
    for bytes in &events {
        agree(bytes).unwrap();
    }
}
