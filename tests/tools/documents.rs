//! Tool documents: the canonical bytes and CID against an independent implementation, what
//! changes a CID and what does not, every validation limit at its boundary, lambdas, builtins.

use seed_agents_store::payload::{Ipld, OpenMap, ToolDocument, ToolKind};
use seed_agents_store::tools::{
    self, cid_of, encode_document, validate_document, Encoded, Kind, MAX_DESCRIPTION_BYTES,
    MAX_NAME_LEN, MAX_SCHEMA_DEPTH, MAX_SOURCE_BYTES, MIN_NAME_LEN,
};
use seed_agents_store::{cbor, Error};
use support::tools::*;

/// The document whose CID was computed independently (see [`fixed_document_cid`]).
fn fixed_document() -> ToolDocument {
    ToolDocument {
        name: "word_count".into(),
        kind: ToolKind::Lambda,
        summary: "Counts the words of a text.".into(),
        description: "Counts the words of a text, splitting on Unicode whitespace — résumé-safe. "
            .repeat(4),
        input: map([
            ("type", s("object")),
            (
                "properties",
                map([(
                    "text",
                    map([("type", s("string")), ("maxLength", Ipld::Integer(100_000))]),
                )]),
            ),
            ("required", Ipld::List(vec![s("text")])),
            ("additionalProperties", Ipld::Bool(false)),
        ]),
        output: Some(map([
            ("type", s("object")),
            (
                "properties",
                map([(
                    "count",
                    map([("type", s("integer")), ("minimum", Ipld::Integer(0))]),
                )]),
            ),
        ])),
        source: Some(
            "export default ({text}) => ({count: text.split(/\\s+/).filter(Boolean).length})\n"
                .into(),
        ),
        runtime: Some("typescript".into()),
        binding: None,
        extra: OpenMap::new(),
    }
}

/// The expected values were computed without this crate, by a 40-line Python 3 script using only
/// the standard library (hashlib for sha2-256, base64.b32encode for base32), which hand-encodes
/// the document as DAG-CBOR with map keys sorted length-first then bytewise:
///
/// ```python
/// import hashlib, base64
/// def head(major, n):
///     if n < 24: return bytes([major << 5 | n])
///     if n < 0x100: return bytes([major << 5 | 24, n])
///     if n < 0x10000: return bytes([major << 5 | 25]) + n.to_bytes(2, "big")
///     if n < 0x100000000: return bytes([major << 5 | 26]) + n.to_bytes(4, "big")
///     return bytes([major << 5 | 27]) + n.to_bytes(8, "big")
/// def enc(v):
///     if v is None: return b"\xf6"
///     if v is True: return b"\xf5"
///     if v is False: return b"\xf4"
///     if isinstance(v, int): return head(0, v) if v >= 0 else head(1, -1 - v)
///     if isinstance(v, str): b = v.encode("utf-8"); return head(3, len(b)) + b
///     if isinstance(v, list): return head(4, len(v)) + b"".join(enc(x) for x in v)
///     if isinstance(v, dict):
///         keys = sorted(v, key=lambda k: (len(k.encode("utf-8")), k.encode("utf-8")))
///         return head(5, len(v)) + b"".join(enc(k) + enc(v[k]) for k in keys)
/// def cid(data):
///     raw = bytes([0x01, 0x71, 0x12, 0x20]) + hashlib.sha256(data).digest()
///     return "b" + base64.b32encode(raw).decode().lower().rstrip("=")
/// doc = {
///     "name": "word_count", "kind": "lambda", "summary": "Counts the words of a text.",
///     "description": "Counts the words of a text, splitting on Unicode whitespace — résumé-safe. " * 4,
///     "input": {"type": "object", "properties": {"text": {"type": "string", "maxLength": 100000}},
///               "required": ["text"], "additionalProperties": False},
///     "output": {"type": "object", "properties": {"count": {"type": "integer", "minimum": 0}}},
///     "source": "export default ({text}) => ({count: text.split(/\\s+/).filter(Boolean).length})\n",
///     "runtime": "typescript",
/// }
/// data = enc(doc)
/// print(len(data), data[:16].hex())   # 666 a8646b696e64666c616d626461646e61
/// print(cid(data))                    # bafyreigw4cfhgrpdiksp45kjwwot4van63mactxqqnydkqhmwewafe6qgm
/// print(cid(b"\xa0"))                 # bafyreigbtj4x7ip5legnfznufuopl4sg4knzc2cof6duas4b3q2fy6swua
/// ```
///
/// The last line is the CID of the empty DAG-CBOR map, the value IPLD tooling commonly shows for
/// `{}`; it anchors the CID construction independently of the CBOR encoder.
const FIXED_CID: &str = "bafyreigw4cfhgrpdiksp45kjwwot4van63mactxqqnydkqhmwewafe6qgm";
const EMPTY_MAP_CID: &str = "bafyreigbtj4x7ip5legnfznufuopl4sg4knzc2cof6duas4b3q2fy6swua";

#[test]
fn fixed_document_cid() {
    let doc = fixed_document();
    let bytes = encode_document(&doc).unwrap();
    assert_eq!(bytes.len(), 666);
    assert_eq!(
        hex::encode(&bytes[..16]),
        "a8646b696e64666c616d626461646e61"
    );
    assert_eq!(cid_of(&bytes), FIXED_CID);
    assert_eq!(Encoded::new(&doc).unwrap().cid, FIXED_CID);
    assert_eq!(cid_of(b"\xa0"), EMPTY_MAP_CID);
    validate_document(&doc).unwrap();
}

#[test]
fn decoding_and_encoding_again_gives_the_same_bytes() {
    let bytes = encode_document(&fixed_document()).unwrap();
    let decoded: ToolDocument = cbor::from_slice(&bytes).unwrap();
    assert_eq!(decoded, fixed_document());
    assert_eq!(encode_document(&decoded).unwrap(), bytes);
    // An absent optional field is left out, not written as null; an explicit null output (a
    // value the TypeScript encoder writes as null) stays null, so its bytes and CID differ.
    let mut doc = fixed_document();
    doc.output = None;
    let without = encode_document(&doc).unwrap();
    assert!(!without.windows(7).any(|w| w == b"\x66output"));
    doc.output = Some(Ipld::Null);
    let null = encode_document(&doc).unwrap();
    assert!(null.windows(8).any(|w| w == b"\x66output\xf6"));
    let decoded: ToolDocument = cbor::from_slice(&null).unwrap();
    assert_eq!(encode_document(&decoded).unwrap(), null);
    assert_ne!(cid_of(&null), cid_of(&without));
}

/// Changes the last byte of a string to another ASCII letter (every string here ends in ASCII).
fn bump(text: &mut String) {
    let last = text.pop().unwrap();
    text.push(if last == 'x' { 'y' } else { 'x' });
}

#[test]
fn a_one_byte_change_in_any_field_changes_the_cid() {
    let base = Encoded::new(&fixed_document()).unwrap().cid;
    type Edit = fn(&mut ToolDocument);
    let edits: &[(&str, Edit)] = &[
        ("name", |d| bump(&mut d.name)),
        ("kind", |d| d.kind = ToolKind::Builtin),
        ("summary", |d| bump(&mut d.summary)),
        ("description", |d| bump(&mut d.description)),
        ("input", |d| {
            if let Ipld::Map(m) = &mut d.input {
                m.insert("type".into(), s("objecu"));
            }
        }),
        ("input integer", |d| {
            if let Ipld::Map(m) = &mut d.input {
                if let Some(Ipld::Map(p)) = m.get_mut("properties") {
                    if let Some(Ipld::Map(t)) = p.get_mut("text") {
                        t.insert("maxLength".into(), Ipld::Integer(100_001));
                    }
                }
            }
        }),
        ("input bool", |d| {
            if let Ipld::Map(m) = &mut d.input {
                m.insert("additionalProperties".into(), Ipld::Bool(true));
            }
        }),
        ("output", |d| {
            if let Some(Ipld::Map(m)) = &mut d.output {
                m.insert("type".into(), s("objecu"));
            }
        }),
        ("output absent", |d| d.output = None),
        ("source", |d| bump(d.source.as_mut().unwrap())),
        ("runtime", |d| bump(d.runtime.as_mut().unwrap())),
        ("binding", |d| d.binding = Some(s("x"))),
        ("extra", |d| {
            d.extra.insert("server".into(), s("x"));
        }),
    ];
    let mut seen = vec![base.clone()];
    for (field, edit) in edits {
        let mut doc = fixed_document();
        edit(&mut doc);
        let cid = Encoded::new(&doc).unwrap().cid;
        assert!(
            !seen.contains(&cid),
            "editing {field} did not change the CID"
        );
        seen.push(cid);
    }
    // And at the byte level: flipping any single byte of the encoding changes the CID.
    let bytes = encode_document(&fixed_document()).unwrap();
    for i in 0..bytes.len() {
        let mut changed = bytes.clone();
        changed[i] ^= 0x01;
        assert_ne!(cid_of(&changed), base, "byte {i}");
    }
}

#[test]
fn map_key_order_in_the_input_does_not_change_the_cid() {
    // The same document as JSON with every map's keys in two different orders.
    let forward = r#"{
        "name": "word_count", "kind": "lambda", "summary": "s", "description": "d",
        "input": {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}, "bb": {"type": "integer"}}},
        "source": "x", "runtime": "python", "server": "srv", "remoteName": "rn"
    }"#;
    let backward = r#"{
        "remoteName": "rn", "server": "srv", "runtime": "python", "source": "x",
        "input": {"properties": {"bb": {"type": "integer"}, "a": {"type": "string"}}, "required": ["a"], "type": "object"},
        "description": "d", "summary": "s", "kind": "lambda", "name": "word_count"
    }"#;
    let a: ToolDocument = serde_json::from_str(forward).unwrap();
    let b: ToolDocument = serde_json::from_str(backward).unwrap();
    let (a, b) = (Encoded::new(&a).unwrap(), Encoded::new(&b).unwrap());
    assert_eq!(a.bytes, b.bytes);
    assert_eq!(a.cid, b.cid);
    // Keys are written length-first: "kind" (4) before "name" (4, bytewise after) before
    // "input" (5) ...; nine keys, the extras "server" and "remoteName" among the typed fields.
    assert_eq!(&a.bytes[..6], b"\xa9\x64kind");
}

/// Asserts `result` is `Invalid` naming `field`.
fn assert_invalid<T: std::fmt::Debug>(result: Result<T, Error>, field: &str) {
    match result {
        Err(Error::Invalid { field: f, .. }) if f == field => {}
        other => panic!("expected Invalid {{ field: {field:?} }}, got {other:?}"),
    }
}

fn nested_schema(depth: usize) -> Ipld {
    // depth 1 is the top-level map; each level below nests under "properties"/"x".
    let mut schema = map([("type", s("string"))]);
    for _ in 1..depth {
        schema = map([("type", s("object")), ("properties", map([("x", schema)]))]);
    }
    schema
}

#[test]
fn every_limit_at_its_boundary() {
    // Name: 2 to 64 characters.
    let mut doc = lambda("ab");
    doc.name = format!("a{}", "b".repeat(MAX_NAME_LEN - 1));
    validate_document(&doc).unwrap();
    doc.name.push('b');
    assert_invalid(validate_document(&doc), "name");
    doc.name = "a".repeat(MIN_NAME_LEN);
    validate_document(&doc).unwrap();
    doc.name = "a".into();
    assert_invalid(validate_document(&doc), "name");
    // Description: 16 KiB, counted in UTF-8 bytes (a 2-byte character fills the last 2).
    let mut doc = lambda("ab");
    doc.description = format!("{}é", "d".repeat(MAX_DESCRIPTION_BYTES - 2));
    validate_document(&doc).unwrap();
    doc.description.push('d');
    assert_invalid(validate_document(&doc), "description");
    // Source: 256 KiB.
    let mut doc = lambda("ab");
    doc.source = Some("s".repeat(MAX_SOURCE_BYTES));
    validate_document(&doc).unwrap();
    doc.source.as_mut().unwrap().push('s');
    assert_invalid(validate_document(&doc), "source");
    // Schema nesting: 32 levels.
    let mut doc = lambda("ab");
    doc.input = nested_schema(MAX_SCHEMA_DEPTH);
    validate_document(&doc).unwrap();
    doc.input = nested_schema(MAX_SCHEMA_DEPTH + 1);
    assert_invalid(validate_document(&doc), "input");
    doc.input = object_schema();
    doc.output = Some(nested_schema(MAX_SCHEMA_DEPTH + 1));
    assert_invalid(validate_document(&doc), "output");
}

#[test]
fn limits_hold_at_the_store_too_and_nothing_is_written() {
    let (_d, mut store, _c) = open();
    let agent = agent(&mut store, A, &[]);
    let mut doc = lambda("ab");
    doc.source = Some("s".repeat(MAX_SOURCE_BYTES));
    store.put_lambda_tool(A, &agent, &doc).unwrap();
    doc.name = "ac".into();
    doc.source.as_mut().unwrap().push('s');
    assert_invalid(store.put_lambda_tool(A, &agent, &doc), "source");
    assert!(store.tool(A, &agent, "ac").unwrap().is_none());
}

#[test]
fn name_pattern() {
    for good in ["ab", "a1", "a_b", "a-b", "search_web2"] {
        tools::check_name(good).unwrap();
    }
    for bad in ["", "a", "1a", "_a", "Ab", "aB", "a b", "a.b", "ä1", "a/b"] {
        assert_invalid(tools::check_name(bad), "name");
    }
}

#[test]
fn schema_shapes() {
    let good = [
        map([("type", Ipld::List(vec![s("string"), s("null")]))]),
        map([
            ("type", s("array")),
            (
                "items",
                map([("type", s("number")), ("minimum", Ipld::Float(0.5))]),
            ),
        ]),
        map([("anyOf", Ipld::List(vec![Ipld::Bool(true), map([])]))]),
        map([(
            "$defs",
            map([("a", map([("enum", Ipld::List(vec![s("x")]))]))]),
        )]),
        map([("x-unknown", Ipld::Integer(1)), ("default", Ipld::Null)]),
    ];
    for schema in good {
        tools::check_schema_shape("input", &schema).unwrap();
    }
    let bad = [
        (s("object"), "(root)"),
        (map([("type", s("strin"))]), "/type"),
        (map([("type", Ipld::List(vec![]))]), "/type"),
        (
            map([("type", Ipld::List(vec![s("string"), s("string")]))]),
            "/type",
        ),
        (map([("properties", Ipld::List(vec![]))]), "/properties"),
        (
            map([("properties", map([("a/b", Ipld::Integer(1))]))]),
            "/properties/a~1b",
        ),
        (
            map([("required", Ipld::List(vec![Ipld::Integer(1)]))]),
            "/required",
        ),
        (
            map([("required", Ipld::List(vec![s("a"), s("a")]))]),
            "/required",
        ),
        (map([("items", s("x"))]), "/items"),
        (
            map([("items", Ipld::List(vec![Ipld::Integer(3)]))]),
            "/items/0",
        ),
        (map([("anyOf", Ipld::List(vec![]))]), "/anyOf"),
        (map([("enum", Ipld::List(vec![]))]), "/enum"),
        (map([("minLength", Ipld::Integer(-1))]), "/minLength"),
        (map([("multipleOf", Ipld::Integer(0))]), "/multipleOf"),
        (map([("description", Ipld::Integer(0))]), "/description"),
    ];
    for (schema, path) in bad {
        match tools::check_schema_shape("output", &schema) {
            Err(Error::Invalid { field, reason }) => {
                assert_eq!(field, "output");
                assert!(
                    reason.starts_with(path),
                    "{reason:?} should start with {path}"
                );
            }
            other => panic!("{schema:?}: {other:?}"),
        }
    }
}

#[test]
fn kinds_carry_what_they_must() {
    let mut doc = lambda("ab");
    doc.source = None;
    assert_invalid(validate_document(&doc), "source");
    let mut doc = lambda("ab");
    doc.binding = Some(s("exec"));
    assert_invalid(validate_document(&doc), "binding");
    let mut doc = builtin("ab", "exec");
    doc.binding = None;
    assert_invalid(validate_document(&doc), "binding");
    let mut doc = builtin("ab", "exec");
    doc.source = Some("x".into());
    assert_invalid(validate_document(&doc), "source");
    let mut doc = lambda("ab");
    doc.kind = ToolKind::Other("macro".into());
    assert_invalid(validate_document(&doc), "kind");
    doc.kind = ToolKind::Mcp;
    assert_invalid(validate_document(&doc), "kind");
}

#[test]
fn lambdas_are_stored_by_cid_and_rewritten_only_when_it_changes() {
    if support::backend::skip_on_postgres(
        "lambdas_are_stored_by_cid_and_rewritten_only_when_it_changes",
        "it counts writes with SQLite's total_changes",
    ) {
        return;
    }
    let (_d, mut store, clock) = open();
    let agent = agent(&mut store, A, &[]);
    let row = store
        .put_lambda_tool(A, &agent, &lambda("summarize"))
        .unwrap();
    assert_eq!(row.kind, Kind::Lambda);
    assert_eq!(row.cid, cid_of(row.doc_cbor.as_bytes()));
    assert_eq!(row.doc_cbor.decode().unwrap(), lambda("summarize"));
    clock.advance(10);
    let before = store.conn().unwrap().total_changes();
    let same = store
        .put_lambda_tool(A, &agent, &lambda("summarize"))
        .unwrap();
    assert_eq!(
        store.conn().unwrap().total_changes(),
        before,
        "an unchanged lambda is not rewritten"
    );
    assert_eq!(same, row);
    let mut edited = lambda("summarize");
    edited.source = Some("export default () => 2\n".into());
    let new = store.put_lambda_tool(A, &agent, &edited).unwrap();
    assert_ne!(new.cid, row.cid);
    assert_eq!((new.created_at, new.updated_at), (T, T + 10));
    // Another account sees nothing, and cannot write to A's agent.
    assert!(store.tool(B, &agent, "summarize").unwrap().is_none());
    assert!(matches!(
        store.put_lambda_tool(B, &agent, &lambda("other")),
        Err(Error::NotFound { what: "agent", .. })
    ));
}

#[test]
fn lambdas_cannot_take_a_verbs_or_a_builtins_name() {
    let (_d, mut store, _c) = open();
    let agent = agent(&mut store, A, &[]);
    assert_invalid(store.put_lambda_tool(A, &agent, &lambda("read")), "name");
    assert_invalid(
        store.put_lambda_tool(A, &agent, &lambda("continue_session")),
        "name",
    );
    store
        .ensure_builtin_tools(A, &agent, &[builtin("web_search", "exec.web_search")])
        .unwrap();
    let err = store
        .put_lambda_tool(A, &agent, &lambda("web_search"))
        .unwrap_err();
    assert!(matches!(err, Error::Conflict { what: "tool", .. }), "{err}");
    assert_eq!(
        store.tool(A, &agent, "web_search").unwrap().unwrap().kind,
        Kind::Builtin
    );
}

#[test]
fn builtins_are_materialized_refreshed_by_cid_and_never_deleted() {
    if support::backend::skip_on_postgres(
        "builtins_are_materialized_refreshed_by_cid_and_never_deleted",
        "it counts writes with SQLite's total_changes",
    ) {
        return;
    }
    let (_d, mut store, clock) = open();
    let agent = agent(&mut store, A, &[]);
    let registry = vec![
        builtin("web_search", "exec.web"),
        builtin("fetch_url", "exec.fetch"),
    ];
    let sync = store.ensure_builtin_tools(A, &agent, &registry).unwrap();
    assert_eq!(sync.inserted, 2);

    // Unchanged registry: nothing written at all.
    let before = store.conn().unwrap().total_changes();
    assert!(store
        .ensure_builtin_tools(A, &agent, &registry)
        .unwrap()
        .is_empty());
    assert_eq!(store.conn().unwrap().total_changes(), before);

    // Withheld by disabling; deleting is refused with a typed error.
    store
        .set_tool_enabled(A, &agent, "fetch_url", false)
        .unwrap();
    let err = store.delete_tool(A, &agent, "fetch_url").unwrap_err();
    assert!(
        matches!(
            err,
            Error::ToolNotDeletable {
                kind: "builtin",
                ..
            }
        ),
        "{err}"
    );
    let names: Vec<String> = store
        .agent_tools(A, &agent, &registry)
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(names, ["web_search"]);

    // A changed contract is rewritten (new CID, `enabled` kept); a dropped one goes.
    clock.advance(5);
    let mut changed = builtin("fetch_url", "exec.fetch");
    changed.description = "Fetches a URL.".into();
    let old = store.tool(A, &agent, "fetch_url").unwrap().unwrap();
    let sync = store.ensure_builtin_tools(A, &agent, &[changed]).unwrap();
    assert_eq!((sync.rewritten, sync.deleted, sync.inserted), (1, 1, 0));
    let new = store.tool(A, &agent, "fetch_url").unwrap().unwrap();
    assert_ne!(new.cid, old.cid);
    assert!(!new.enabled);
    assert_eq!(new.cid, cid_of(new.doc_cbor.as_bytes()));
    assert!(store.tool(A, &agent, "web_search").unwrap().is_none());
}

#[test]
fn a_lambda_keeps_its_name_against_a_new_builtin() {
    let (_d, mut store, _c) = open();
    let agent = agent(&mut store, A, &[]);
    store
        .put_lambda_tool(A, &agent, &lambda("translate"))
        .unwrap();
    let sync = store
        .ensure_builtin_tools(A, &agent, &[builtin("translate", "exec.translate")])
        .unwrap();
    assert_eq!(
        sync.shadowed,
        vec![(agent.clone(), "translate".to_string())]
    );
    assert_eq!(
        store.tool(A, &agent, "translate").unwrap().unwrap().kind,
        Kind::Lambda
    );
    assert!(store.delete_tool(A, &agent, "translate").unwrap());
    assert!(!store.delete_tool(A, &agent, "translate").unwrap());
}

#[test]
fn a_bad_registry_is_refused_before_anything_is_written() {
    let (_d, mut store, _c) = open();
    let agent = agent(&mut store, A, &[]);
    let mut bad = builtin("ok_tool", "exec");
    bad.description = "d".repeat(MAX_DESCRIPTION_BYTES + 1);
    assert_invalid(
        store.ensure_builtin_tools(A, &agent, &[builtin("first", "exec"), bad]),
        "description",
    );
    assert_invalid(
        store.ensure_builtin_tools(A, &agent, &[builtin("twice", "a"), builtin("twice", "b")]),
        "name",
    );
    assert_invalid(
        store.ensure_builtin_tools(A, &agent, &[lambda("lam")]),
        "kind",
    );
    assert!(store.tool(A, &agent, "first").unwrap().is_none());
}
