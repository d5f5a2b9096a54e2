//! Payloads against hand-built canonical DAG-CBOR

use super::*;

/// A CBOR value as the description's encoder (`@ipld/dag-cbor`) writes it; encoded by hand here,
/// independently of the store's encoder.
enum V {
    Null,
    Bool(bool),
    Int(i64),
    Str(&'static str),
    List(Vec<V>),
    Map(Vec<(&'static str, V)>),
}

fn head(major: u8, n: u64, out: &mut Vec<u8>) {
    let m = major << 5;
    match n {
        0..=23 => out.push(m | n as u8),
        24..=0xff => out.extend([m | 24, n as u8]),
        0x100..=0xffff => {
            out.push(m | 25);
            out.extend((n as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(m | 26);
            out.extend((n as u32).to_be_bytes());
        }
        _ => {
            out.push(m | 27);
            out.extend(n.to_be_bytes());
        }
    }
}

fn encode(v: &V, out: &mut Vec<u8>) {
    match v {
        V::Null => out.push(0xf6),
        V::Bool(b) => out.push(if *b { 0xf5 } else { 0xf4 }),
        V::Int(i) if *i >= 0 => head(0, *i as u64, out),
        V::Int(i) => head(1, (-1 - *i) as u64, out),
        V::Str(s) => {
            head(3, s.len() as u64, out);
            out.extend(s.as_bytes());
        }
        V::List(items) => {
            head(4, items.len() as u64, out);
            items.iter().for_each(|i| encode(i, out));
        }
        V::Map(entries) => {
            // DAG-CBOR map order: shorter keys first, then bytewise.
            let mut sorted: Vec<_> = entries.iter().collect();
            sorted.sort_by(|a, b| a.0.len().cmp(&b.0.len()).then(a.0.cmp(b.0)));
            head(5, sorted.len() as u64, out);
            for (k, v) in sorted {
                encode(&V::Str(k), out);
                encode(v, out);
            }
        }
    }
}

fn bytes(v: V) -> Vec<u8> {
    let mut out = Vec::new();
    encode(&v, &mut out);
    out
}

/// Decodes hand-built bytes as `T` and checks that encoding the value gives the same bytes.
fn decodes_and_reencodes<T>(bytes: &[u8]) -> T
where
    T: serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let value: T = cbor::from_slice(bytes).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cbor::to_vec(&value).unwrap(), bytes, "{value:?}");
    value
}

fn meta_full() -> V {
    V::Map(vec![
        ("accountId", V::Str("acct-a")),
        ("signerId", V::Str("signer-1")),
        ("model", V::Str("m-1")),
        ("provider", V::Str("openai")),
        (
            "usage",
            V::Map(vec![
                ("inputTokens", V::Int(12)),
                ("outputTokens", V::Int(300)),
            ]),
        ),
        ("durationMs", V::Int(70_000)),
        ("reasoningLevel", V::Str("default")),
        ("futureMetaField", V::Bool(true)),
    ])
}

#[test]
fn message_events_decode_description_bytes_and_reencode_them_identically() {
    // Every optional absent, its key left out (the TypeScript encoder writes no undefined).
    let minimal = bytes(V::Map(vec![
        ("type", V::Str("message")),
        ("role", V::Str("user")),
        ("content", V::Str("hello")),
    ]));
    let SessionEventPayload::Message(m) = decodes_and_reencodes(&minimal) else {
        panic!("not a message")
    };
    assert_eq!(m.content, "hello");
    assert_eq!(m.actor, None);
    // Every field present, an unknown one included.
    let full = bytes(V::Map(vec![
        ("type", V::Str("message")),
        ("role", V::Str("assistant")),
        ("content", V::Str("done")),
        ("toolCallId", V::Str("c1")),
        ("rawMarkdown", V::Str("**done**")),
        (
            "blocks",
            V::List(vec![V::Map(vec![("kind", V::Str("text"))])]),
        ),
        ("contextLines", V::List(vec![V::Str("ctx")])),
        (
            "attachments",
            V::List(vec![V::Map(vec![
                ("name", V::Str("a.png")),
                ("size", V::Int(3)),
            ])]),
        ),
        ("actor", V::Str("user")),
        ("meta", meta_full()),
        ("zFuture", V::Int(-5)),
    ]));
    let SessionEventPayload::Message(m) = decodes_and_reencodes(&full) else {
        panic!("not a message")
    };
    assert_eq!(m.actor, Some(SessionActor::User));
    assert_eq!(m.meta.unwrap().duration_ms, Some(70_000));
    assert!(m.extra.contains_key("zFuture"));
}

#[test]
fn tool_and_error_events_decode_description_bytes_and_reencode_them_identically() {
    let call = bytes(V::Map(vec![
        ("type", V::Str("tool_call")),
        ("id", V::Str("c1")),
        ("name", V::Str("read")),
        ("input", V::Map(vec![("path", V::Str("~/memory/a.md"))])),
    ]));
    assert!(matches!(
        decodes_and_reencodes::<SessionEventPayload>(&call),
        SessionEventPayload::ToolCall(_)
    ));
    let spawn = bytes(V::Map(vec![
        ("type", V::Str("tool_spawn")),
        ("toolCallId", V::Str("c2")),
        ("name", V::Str("delegate")),
        ("runId", V::Str("r-9")),
        ("title", V::Str("research")),
    ]));
    assert!(matches!(
        decodes_and_reencodes::<SessionEventPayload>(&spawn),
        SessionEventPayload::ToolSpawn(_)
    ));
    // An output of unknown shape keeps an explicit null; the error is a string or absent.
    for (output, error) in [
        (Some(V::List(vec![V::Int(1), V::Null])), None),
        (Some(V::Null), None),
        (None, Some(V::Str("denied"))),
    ] {
        let mut fields = vec![
            ("type", V::Str("tool_result")),
            ("toolCallId", V::Str("c1")),
            ("name", V::Str("read")),
            ("actor", V::Str("user")),
            ("meta", meta_full()),
        ];
        fields.extend(output.map(|o| ("output", o)));
        fields.extend(error.map(|e| ("error", e)));
        let result = bytes(V::Map(fields));
        assert!(matches!(
            decodes_and_reencodes::<SessionEventPayload>(&result),
            SessionEventPayload::ToolResult(_)
        ));
    }
    let error = bytes(V::Map(vec![
        ("type", V::Str("error")),
        ("message", V::Str("provider failed")),
        ("actor", V::Str("system")),
    ]));
    assert!(matches!(
        decodes_and_reencodes::<SessionEventPayload>(&error),
        SessionEventPayload::Error(_)
    ));
    // Any other map, typed or not, is kept.
    for other in [
        bytes(V::Map(vec![
            ("type", V::Str("handoff")),
            ("to", V::Str("x")),
        ])),
        bytes(V::Map(vec![("note", V::Str("untyped"))])),
    ] {
        assert!(matches!(
            decodes_and_reencodes::<SessionEventPayload>(&other),
            SessionEventPayload::Other(_)
        ));
    }
}

#[test]
fn conversation_payloads_decode_description_bytes_and_reencode_them_identically() {
    // ModelProviderConfig, absent optionals and then all set.
    decodes_and_reencodes::<ModelProviderConfig>(&bytes(V::Map(vec![("type", V::Str("openai"))])));
    decodes_and_reencodes::<ModelProviderConfig>(&bytes(V::Map(vec![
        ("type", V::Str("anthropic")),
        ("modelDefaults", V::Map(vec![("temperature", V::Int(0))])),
        (
            "secretRefs",
            V::Map(vec![("apiKey", V::Str("anthropic-key"))]),
        ),
        ("baseUrl", V::Str("https://api.example")),
        ("organization", V::Str("kept")),
    ])));
    // AgentDefinition: every field but mcpServers is open and kept.
    let def = decodes_and_reencodes::<AgentDefinition>(&bytes(V::Map(vec![
        ("name", V::Str("Helper")),
        ("mcpServers", V::List(vec![V::Str("linear")])),
        ("systemPrompt", V::Str("be brief")),
        (
            "grants",
            V::Map(vec![("tools", V::List(vec![V::Str("read")]))]),
        ),
    ])));
    assert!(def.references_mcp_server("linear"));
    // RunPlan with a runtime-resolved step and settledAt, and without the optionals.
    decodes_and_reencodes::<RunPlan>(&bytes(V::Map(vec![
        ("title", V::Str("Ship it")),
        (
            "steps",
            V::List(vec![
                V::Map(vec![
                    ("id", V::Str("s1")),
                    ("label", V::Str("build")),
                    ("status", V::Str("done")),
                    ("resolvedBy", V::Str("runtime")),
                ]),
                V::Map(vec![
                    ("id", V::Str("s2")),
                    ("label", V::Str("test")),
                    ("status", V::Str("in_progress")),
                ]),
            ]),
        ),
        ("settledAt", V::Int(T)),
    ])));
    decodes_and_reencodes::<RunPlan>(&bytes(V::Map(vec![("steps", V::List(vec![]))])));
    // ModelOverride and SecretMetadata.
    decodes_and_reencodes::<ModelOverride>(&bytes(V::Map(vec![("provider", V::Str("openai"))])));
    decodes_and_reencodes::<SecretMetadata>(&bytes(V::Map(vec![
        ("kind", V::Str("api-key")),
        ("mcpServer", V::Str("linear")),
    ])));
}
