//! Fixtures shared by the tools_* tests (tool documents, MCP servers, drafts, continuations).

use crate::backend;

use std::collections::BTreeMap;
use std::sync::Arc;

use seed_agents_store::agents::NewAgent;
use seed_agents_store::clock::ManualClock;
use seed_agents_store::payload::{AgentDefinition, Ipld, OpenMap, ToolDocument, ToolKind};
use seed_agents_store::Store;

/// The account under test.
pub const A: &str = "acct-a";
/// Another account, which must never see A's rows.
pub const B: &str = "acct-b";
/// The clock's starting time (epoch milliseconds).
pub const T: i64 = backend::T0;

/// A DAG-CBOR string.
pub fn s(value: &str) -> Ipld {
    Ipld::String(value.to_owned())
}

/// A DAG-CBOR map of `entries`.
pub fn map<const N: usize>(entries: [(&str, Ipld); N]) -> Ipld {
    Ipld::Map(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect::<BTreeMap<_, _>>(),
    )
}

/// A fresh store on a manual clock at [`T`].
pub fn open() -> (tempfile::TempDir, Store, ManualClock) {
    let dir = tempfile::tempdir().unwrap();
    let (store, clock) = backend::open(dir.path());
    (dir, store, clock)
}

/// Opens a second connection (its own `Store`) on the same file.
pub fn reopen(dir: &tempfile::TempDir, clock: &ManualClock) -> Store {
    Store::open_with_clock(
        backend::location(dir.path(), "db.sqlite"),
        Arc::new(clock.clone()),
    )
    .unwrap()
}

/// Creates an agent of `account` whose definition lists `servers`.
pub fn agent(store: &mut Store, account: &str, servers: &[&str]) -> String {
    let definition = AgentDefinition {
        mcp_servers: if servers.is_empty() {
            None
        } else {
            Some(servers.iter().map(|s| s.to_string()).collect())
        },
        extra: OpenMap::new(),
    };
    store
        .create_agent(
            account,
            &NewAgent {
                definition,
                state_dir: "agents/x".into(),
                public_read: false,
                public_chat: false,
            },
        )
        .unwrap()
        .id
}

/// `{type: object, properties: {text: {type: string}}, required: [text]}`.
pub fn object_schema() -> Ipld {
    map([
        ("type", s("object")),
        ("properties", map([("text", map([("type", s("string"))]))])),
        ("required", Ipld::List(vec![s("text")])),
    ])
}

/// A valid lambda named `name`.
pub fn lambda(name: &str) -> ToolDocument {
    ToolDocument {
        name: name.into(),
        kind: ToolKind::Lambda,
        summary: "A lambda.".into(),
        description: "Does a thing.".into(),
        input: object_schema(),
        output: None,
        source: Some("export default () => 1\n".into()),
        runtime: Some("typescript".into()),
        binding: None,
        extra: OpenMap::new(),
    }
}

/// A valid builtin named `name` bound to `binding`.
pub fn builtin(name: &str, binding: &str) -> ToolDocument {
    ToolDocument {
        name: name.into(),
        kind: ToolKind::Builtin,
        summary: format!("The {name} builtin."),
        description: "Shipped with the server.".into(),
        input: object_schema(),
        output: None,
        source: None,
        runtime: None,
        binding: Some(s(binding)),
        extra: OpenMap::new(),
    }
}
