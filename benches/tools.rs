//! Tool documents and the MCP projection.
//!
//! - `tool_encode_cid_16k`: canonical DAG-CBOR encoding plus CIDv1 of a tool document whose
//!   description is the full 16 KiB (about 16.6 KB encoded).
//! - `mcp_sync_noop_100x10`: the projection sync of one server's 100 tools onto 10 agents when
//!   nothing changed (1,000 stored projections). It must write nothing; the bench checks
//!   `total_changes()` before and after.

use std::collections::BTreeMap;

use criterion::{criterion_group, criterion_main, Criterion};
use seed_agents_store::agents::NewAgent;
use seed_agents_store::mcp::McpServerInput;
use seed_agents_store::payload::*;
use seed_agents_store::tools::{Encoded, MAX_DESCRIPTION_BYTES};
use seed_agents_store::Store;

const ACCOUNT: &str = "acct";

fn s(v: &str) -> Ipld {
    Ipld::String(v.into())
}

fn schema() -> Ipld {
    Ipld::Map(BTreeMap::from([
        ("type".into(), s("object")),
        (
            "properties".into(),
            Ipld::Map(BTreeMap::from([(
                "query".into(),
                Ipld::Map(BTreeMap::from([("type".into(), s("string"))])),
            )])),
        ),
        ("required".into(), Ipld::List(vec![s("query")])),
    ]))
}

fn big_document() -> ToolDocument {
    ToolDocument {
        name: "big_tool".into(),
        kind: ToolKind::Lambda,
        summary: "A tool with the largest description allowed.".into(),
        description: "lorem ipsum ".repeat(MAX_DESCRIPTION_BYTES / 12),
        input: schema(),
        output: Some(schema()),
        source: Some("export default ({query}) => query\n".into()),
        runtime: Some("typescript".into()),
        binding: None,
        extra: OpenMap::new(),
    }
}

fn encode_cid(c: &mut Criterion) {
    let doc = big_document();
    let bytes = Encoded::new(&doc).unwrap().bytes.len();
    c.bench_function(&format!("tool_encode_cid_16k ({bytes} bytes)"), |b| {
        b.iter(|| Encoded::new(std::hint::black_box(&doc)).unwrap())
    });
}

fn sync_noop(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("bench.sqlite")).unwrap();
    store
        .create_mcp_server(
            ACCOUNT,
            "big",
            &McpServerInput {
                config: McpServerConfig {
                    url: "https://big.example/mcp".into(),
                    transport: None,
                    headers: None,
                    secret_refs: None,
                    extra: OpenMap::new(),
                },
                secret_headers: BTreeMap::new(),
            },
        )
        .unwrap();
    for i in 0..10 {
        store
            .create_agent(
                ACCOUNT,
                &NewAgent {
                    definition: AgentDefinition {
                        mcp_servers: Some(vec!["big".into()]),
                        extra: OpenMap::new(),
                    },
                    state_dir: format!("agents/{i}"),
                    public_read: false,
                    public_chat: false,
                },
            )
            .unwrap();
    }
    let tools: McpTools = (0..100)
        .map(|i| McpToolInfo {
            name: format!("tool_{i}"),
            description: Some(format!(
                "Tool number {i}: searches things and returns results."
            )),
            input_schema: Some(schema()),
            extra: OpenMap::new(),
        })
        .collect();
    store
        .record_mcp_discovery(ACCOUNT, "big", Ok(tools))
        .unwrap();
    store.sync_mcp_tools(ACCOUNT, None).unwrap();
    let before = store.conn().unwrap().total_changes();
    c.bench_function("mcp_sync_noop_100x10", |b| {
        b.iter(|| {
            let sync = store.sync_mcp_tools(ACCOUNT, None).unwrap();
            assert!(sync.is_empty());
        })
    });
    assert_eq!(
        store.conn().unwrap().total_changes(),
        before,
        "a no-op sync wrote"
    );
}

criterion_group!(benches, encode_cid, sync_noop);
criterion_main!(benches);
