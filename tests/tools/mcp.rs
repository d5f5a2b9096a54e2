//! MCP servers: CRUD per account, owned secrets, discoveries (a failed refresh keeps the last good
//! tools), the projection into tool documents, delete scrubbing everything, and the limits.

use std::collections::BTreeMap;

use seed_agents_store::mcp::{
    self, McpServerInput, MAX_HEADER_NAME_BYTES, MAX_HEADER_VALUE_BYTES, MAX_SERVER_NAME_LEN,
    MAX_TOOL_NAME_BYTES, MAX_URL_BYTES, STATE_CONNECTED, STATE_ERROR,
};
use seed_agents_store::payload::{
    AgentDefinition, McpServerConfig, McpServerStatus, McpToolInfo, McpTools, OpenMap, ToolDocument,
};
use seed_agents_store::schema::{agents, tool_documents};
use seed_agents_store::tools::{cid_of, Kind, MAX_DESCRIPTION_BYTES};
use seed_agents_store::{Error, Store};
use support::tools::*;

fn config(url: &str) -> McpServerConfig {
    McpServerConfig {
        url: url.into(),
        transport: None,
        headers: None,
        secret_refs: None,
        extra: OpenMap::new(),
    }
}

fn input(url: &str) -> McpServerInput {
    McpServerInput {
        config: config(url),
        secret_headers: BTreeMap::new(),
    }
}

fn with_secret(url: &str, header: &str, value: &str) -> McpServerInput {
    let mut i = input(url);
    i.secret_headers.insert(header.into(), value.into());
    i
}

fn tool(name: &str, description: &str) -> McpToolInfo {
    McpToolInfo {
        name: name.into(),
        description: Some(description.into()),
        input_schema: Some(object_schema()),
        extra: OpenMap::new(),
    }
}

fn tools(n: usize) -> McpTools {
    (0..n)
        .map(|i| tool(&format!("tool_{i}"), &format!("Tool number {i}.\nMore.")))
        .collect()
}

fn mcp_names(store: &Store, account: &str, agent: &str) -> Vec<String> {
    let mut names: Vec<String> =
        tool_documents::list_by_agent_id(&store.reading().unwrap(), account, agent)
            .unwrap()
            .into_iter()
            .filter(|r| r.kind == Kind::Mcp)
            .map(|r| r.name)
            .collect();
    names.sort();
    names
}

fn status(row: &mcp::Row) -> McpServerStatus {
    row.status_cbor.as_ref().unwrap().decode().unwrap()
}

fn assert_invalid<T: std::fmt::Debug>(result: Result<T, Error>, field: &str) {
    match result {
        Err(Error::Invalid { field: f, .. }) if f == field => {}
        other => panic!("expected Invalid {{ field: {field:?} }}, got {other:?}"),
    }
}

#[test]
fn servers_are_unique_per_account_and_listed_by_name() {
    let (_d, store, _c) = open();
    store
        .create_mcp_server(A, "github", &input("https://gh.example/mcp"))
        .unwrap();
    store
        .create_mcp_server(A, "docs", &input("https://docs.example/mcp"))
        .unwrap();
    store
        .create_mcp_server(B, "github", &input("https://other.example/mcp"))
        .unwrap();
    let err = store
        .create_mcp_server(A, "github", &input("https://x.example"))
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Conflict {
                what: "MCP server",
                ..
            }
        ),
        "{err}"
    );
    let names: Vec<String> = store
        .mcp_servers(A)
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(names, ["docs", "github"]);
    let row = store.mcp_server(A, "github").unwrap().unwrap();
    assert!(row.enabled && row.tools_cbor.is_none() && row.status_cbor.is_none());
    let config: McpServerConfig = row.config_cbor.decode().unwrap();
    assert_eq!(config.url, "https://gh.example/mcp");
    assert!(store.mcp_server(B, "docs").unwrap().is_none());
    assert!(matches!(
        store.update_mcp_server(B, "docs", &input("https://x.example")),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn secret_header_values_live_in_owned_secrets() {
    let (_d, store, _c) = open();
    store
        .set_secret(A, "shared-token", b"shared", None)
        .unwrap();
    let mut i = with_secret("https://gh.example/mcp", "Authorization", "Bearer abc");
    i.config.secret_refs = Some(BTreeMap::from([("X-Shared".into(), "shared-token".into())]));
    i.config.headers = Some(BTreeMap::from([("X-Plain".into(), "1".into())]));
    let row = store.create_mcp_server(A, "github", &i).unwrap();
    let stored: McpServerConfig = row.config_cbor.decode().unwrap();
    let refs = stored.secret_refs.unwrap();
    assert_eq!(refs["Authorization"], "mcp-github-authorization");
    assert_eq!(refs["X-Shared"], "shared-token");
    assert_eq!(
        store
            .decrypt_secret(A, "mcp-github-authorization")
            .unwrap()
            .expose(),
        b"Bearer abc"
    );
    // The config never holds the value.
    assert!(!row
        .config_cbor
        .as_bytes()
        .windows(10)
        .any(|w| w == b"Bearer abc"));

    // Update: a new value replaces the old; dropping the header deletes the owned secret only.
    let mut keep = McpServerInput {
        config: McpServerConfig {
            secret_refs: Some(BTreeMap::new()),
            ..config(&stored.url)
        },
        secret_headers: BTreeMap::from([("authorization".into(), "Bearer new".into())]),
    };
    store.update_mcp_server(A, "github", &keep).unwrap();
    assert_eq!(
        store
            .decrypt_secret(A, "mcp-github-authorization")
            .unwrap()
            .expose(),
        b"Bearer new"
    );
    keep.secret_headers.clear();
    keep.config.secret_refs = Some(BTreeMap::from([("X-Shared".into(), "shared-token".into())]));
    store.update_mcp_server(A, "github", &keep).unwrap();
    assert!(store
        .secret(A, "mcp-github-authorization")
        .unwrap()
        .is_none());
    assert!(store.secret(A, "shared-token").unwrap().is_some());
}

#[test]
fn a_failed_refresh_keeps_the_last_good_tools() {
    let (_d, mut store, clock) = open();
    let agent = agent(&mut store, A, &["github"]);
    store
        .create_mcp_server(A, "github", &input("https://gh.example/mcp"))
        .unwrap();
    let good = store
        .record_mcp_discovery(A, "github", Ok(tools(3)))
        .unwrap();
    assert_eq!(status(&good).state, STATE_CONNECTED);
    assert_eq!(status(&good).checked_at, Some(T));
    assert_eq!(mcp_names(&store, A, &agent).len(), 3);

    clock.advance(1_000);
    let failed = store
        .record_mcp_discovery(A, "github", Err("connection refused".into()))
        .unwrap();
    assert_eq!(failed.tools_cbor, good.tools_cbor);
    let st = status(&failed);
    assert_eq!(
        (st.state.as_str(), st.error.as_deref()),
        (STATE_ERROR, Some("connection refused"))
    );
    assert_eq!(st.checked_at, Some(T + 1_000));
    assert_eq!(
        mcp_names(&store, A, &agent).len(),
        3,
        "projections survive a failed refresh"
    );

    // A tool list that fails the checks is a failed refresh too.
    let mut bad = tools(1);
    bad[0].input_schema = Some(map([("type", s("nonsense"))]));
    let refused = store.record_mcp_discovery(A, "github", Ok(bad)).unwrap();
    assert_eq!(refused.tools_cbor, good.tools_cbor);
    let st = status(&refused);
    assert_eq!(st.state, STATE_ERROR);
    assert!(st.error.unwrap().contains("inputSchema"));

    // A later success replaces the tools.
    let again = store
        .record_mcp_discovery(A, "github", Ok(tools(1)))
        .unwrap();
    assert_eq!(again.tools_cbor.unwrap().decode().unwrap(), tools(1));
    assert_eq!(mcp_names(&store, A, &agent), ["github__tool_0"]);
}

#[test]
fn projections_follow_servers_and_definitions() {
    let (_d, mut store, clock) = open();
    let uses = agent(&mut store, A, &["github"]);
    let other = agent(&mut store, A, &["docs"]);
    store
        .create_mcp_server(A, "github", &input("https://gh.example/mcp"))
        .unwrap();
    store
        .record_mcp_discovery(A, "github", Ok(tools(2)))
        .unwrap();
    assert_eq!(
        mcp_names(&store, A, &uses),
        ["github__tool_0", "github__tool_1"]
    );
    assert!(mcp_names(&store, A, &other).is_empty());

    let row = store.tool(A, &uses, "github__tool_0").unwrap().unwrap();
    assert_eq!(row.cid, cid_of(row.doc_cbor.as_bytes()));
    let doc: ToolDocument = row.doc_cbor.decode().unwrap();
    assert_eq!(doc.summary, "Tool number 0.");
    assert_eq!(doc.extra["server"], s("github"));
    assert_eq!(doc.extra["remoteName"], s("tool_0"));

    // A changed tool is rewritten (new CID, `enabled` and `created_at` kept).
    store
        .set_tool_enabled(A, &uses, "github__tool_0", false)
        .unwrap();
    clock.advance(7);
    let mut changed = tools(2);
    changed[0].description = Some("Changed.".into());
    store
        .record_mcp_discovery(A, "github", Ok(changed))
        .unwrap();
    let rewritten = store.tool(A, &uses, "github__tool_0").unwrap().unwrap();
    assert_ne!(rewritten.cid, row.cid);
    assert!(!rewritten.enabled);
    assert_eq!((rewritten.created_at, rewritten.updated_at), (T, T + 7));
    let untouched = store.tool(A, &uses, "github__tool_1").unwrap().unwrap();
    assert_eq!(untouched.updated_at, T);

    // Disabled: gone. Enabled: back.
    store.set_mcp_server_enabled(A, "github", false).unwrap();
    assert!(mcp_names(&store, A, &uses).is_empty());
    store.set_mcp_server_enabled(A, "github", true).unwrap();
    assert_eq!(mcp_names(&store, A, &uses).len(), 2);

    // Dropped from the definition: gone with the definition write, so a later sync finds
    // nothing to do.
    store
        .update_agent_definition(A, &uses, &AgentDefinition::default())
        .unwrap();
    assert!(mcp_names(&store, A, &uses).is_empty());
    let sync = store.sync_mcp_tools(A, None).unwrap();
    assert_eq!(sync.deleted, 0);

    // Listed again: projected by the definition write itself.
    let listing = AgentDefinition {
        mcp_servers: Some(vec!["github".into()]),
        ..AgentDefinition::default()
    };
    store.update_agent_definition(A, &uses, &listing).unwrap();
    assert_eq!(mcp_names(&store, A, &uses).len(), 2);

    // A new agent that lists the server holds its tools as soon as it exists.
    let newcomer = agent(&mut store, A, &["github"]);
    assert_eq!(mcp_names(&store, A, &newcomer).len(), 2);
}

#[test]
fn a_lambda_that_holds_the_name_wins_and_projections_are_not_deletable() {
    let (_d, mut store, _c) = open();
    let agent = agent(&mut store, A, &["github"]);
    store
        .create_mcp_server(A, "github", &input("https://gh.example/mcp"))
        .unwrap();
    // A lambda named like a projection-to-be (valid lambda name) holds it first.
    store
        .put_lambda_tool(A, &agent, &lambda("github__tool_0"))
        .unwrap();
    store
        .record_mcp_discovery(A, "github", Ok(tools(2)))
        .unwrap();
    assert_eq!(
        store
            .tool(A, &agent, "github__tool_0")
            .unwrap()
            .unwrap()
            .kind,
        Kind::Lambda
    );
    assert_eq!(
        store
            .tool(A, &agent, "github__tool_1")
            .unwrap()
            .unwrap()
            .kind,
        Kind::Mcp
    );
    let sync = store.sync_mcp_tools(A, Some(&agent)).unwrap();
    assert_eq!(
        sync.shadowed,
        vec![(agent.clone(), "github__tool_0".to_string())]
    );
    // A projection cannot be replaced by a lambda, nor deleted by hand.
    let err = store
        .put_lambda_tool(A, &agent, &lambda("github__tool_1"))
        .unwrap_err();
    assert!(matches!(err, Error::Conflict { what: "tool", .. }), "{err}");
    let err = store.delete_tool(A, &agent, "github__tool_1").unwrap_err();
    assert!(
        matches!(err, Error::ToolNotDeletable { kind: "mcp", .. }),
        "{err}"
    );
}

#[test]
fn delete_leaves_no_projected_document_reference_or_owned_secret() {
    let (_d, mut store, clock) = open();
    let first = agent(&mut store, A, &["gh", "gh-enterprise"]);
    let second = agent(&mut store, A, &["gh"]);
    store
        .set_secret(A, "shared-token", b"shared", None)
        .unwrap();
    let mut i = with_secret("https://gh.example/mcp", "Authorization", "Bearer abc");
    i.secret_headers.insert("X-Api-Key".into(), "k".into());
    i.config.secret_refs = Some(BTreeMap::from([("X-Shared".into(), "shared-token".into())]));
    store.create_mcp_server(A, "gh", &i).unwrap();
    store
        .create_mcp_server(
            A,
            "gh-enterprise",
            &with_secret("https://ghe.example", "Authorization", "e"),
        )
        .unwrap();
    store.record_mcp_discovery(A, "gh", Ok(tools(3))).unwrap();
    store
        .record_mcp_discovery(A, "gh-enterprise", Ok(tools(2)))
        .unwrap();
    assert_eq!(mcp_names(&store, A, &first).len(), 5);

    clock.advance(3);
    let deletion = store.delete_mcp_server(A, "gh").unwrap();
    assert_eq!(deletion.agents_scrubbed, 2);
    assert_eq!(deletion.documents_deleted, 6);
    assert_eq!(deletion.secrets_deleted, 2);

    assert!(store.mcp_server(A, "gh").unwrap().is_none());
    for agent in [&first, &second] {
        let row = agents::get(&store.reading().unwrap(), A, agent)
            .unwrap()
            .unwrap();
        let definition: AgentDefinition = row.definition_cbor.decode().unwrap();
        assert!(!definition.references_mcp_server("gh"));
        assert_eq!(row.updated_at, T + 3);
    }
    let docs = tool_documents::list_by_account_id(&store.reading().unwrap(), A).unwrap();
    assert!(docs.iter().all(|d| !d.name.starts_with("gh__")), "{docs:?}");
    assert_eq!(docs.len(), 2, "gh-enterprise's projections stay");
    let secrets: Vec<String> = store
        .secrets(A)
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(secrets, ["mcp-gh-enterprise-authorization", "shared-token"]);
    let first_def: AgentDefinition = agents::get(&store.reading().unwrap(), A, &first)
        .unwrap()
        .unwrap()
        .definition_cbor
        .decode()
        .unwrap();
    assert_eq!(first_def.mcp_server_names(), ["gh-enterprise"]);
    assert!(matches!(
        store.delete_mcp_server(A, "gh"),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn a_sync_with_nothing_changed_touches_no_row() {
    if support::backend::skip_on_postgres(
        "a_sync_with_nothing_changed_touches_no_row",
        "it counts writes with SQLite's total_changes",
    ) {
        return;
    }
    let (_d, mut store, clock) = open();
    store
        .create_mcp_server(A, "big", &input("https://big.example/mcp"))
        .unwrap();
    let agents: Vec<String> = (0..10).map(|_| agent(&mut store, A, &["big"])).collect();
    store
        .record_mcp_discovery(A, "big", Ok(tools(100)))
        .unwrap();
    let rows = tool_documents::list_by_account_id(&store.reading().unwrap(), A).unwrap();
    assert_eq!(rows.len(), 1_000);
    clock.advance(60_000);
    let before = store.conn().unwrap().total_changes();
    let sync = store.sync_mcp_tools(A, None).unwrap();
    assert!(sync.is_empty(), "{sync:?}");
    for agent in &agents {
        store.sync_mcp_tools(A, Some(agent)).unwrap();
    }
    assert_eq!(
        store.conn().unwrap().total_changes(),
        before,
        "a no-op sync wrote"
    );
    assert_eq!(
        tool_documents::list_by_account_id(&store.reading().unwrap(), A).unwrap(),
        rows
    );
}

#[test]
fn every_limit_at_its_boundary() {
    let (_d, store, _c) = open();
    // Server name: 64 characters.
    let name = format!("s{}", "x".repeat(MAX_SERVER_NAME_LEN - 1));
    store
        .create_mcp_server(A, &name, &input("https://a.example"))
        .unwrap();
    assert_invalid(
        store.create_mcp_server(A, &format!("{name}x"), &input("https://a.example")),
        "name",
    );
    for bad in ["", "Gh", "1gh", "g__h", "gh_", "g.h"] {
        assert_invalid(mcp::check_server_name(bad), "name");
    }
    // URL: 2048 bytes.
    let url = format!("https://a.example/{}", "p".repeat(MAX_URL_BYTES - 18));
    assert_eq!(url.len(), MAX_URL_BYTES);
    store.create_mcp_server(A, "u1", &input(&url)).unwrap();
    assert_invalid(
        store.create_mcp_server(A, "u2", &input(&format!("{url}p"))),
        "config.url",
    );
    assert_invalid(
        store.create_mcp_server(A, "u3", &input("ftp://a.example")),
        "config.url",
    );
    // Header name: 128 bytes; plain value: 8 KiB.
    let header = "h".repeat(MAX_HEADER_NAME_BYTES);
    let mut i = input("https://a.example");
    i.config.headers = Some(BTreeMap::from([(
        header.clone(),
        "v".repeat(MAX_HEADER_VALUE_BYTES),
    )]));
    store.create_mcp_server(A, "h1", &i).unwrap();
    i.config.headers = Some(BTreeMap::from([(format!("{header}h"), "v".into())]));
    assert_invalid(store.create_mcp_server(A, "h2", &i), "config.headers");
    i.config.headers = Some(BTreeMap::from([(
        "x".into(),
        "v".repeat(MAX_HEADER_VALUE_BYTES + 1),
    )]));
    assert_invalid(store.create_mcp_server(A, "h3", &i), "config.headers");
    i.config.headers = Some(BTreeMap::from([("x".into(), "a\r\nInjected: 1".into())]));
    assert_invalid(store.create_mcp_server(A, "h4", &i), "config.headers");
    // Secret header value: the secrets module's 64 KiB.
    let max = seed_agents_store::secrets::MAX_VALUE_BYTES;
    store
        .create_mcp_server(
            A,
            "k1",
            &with_secret("https://a.example", "Auth", &"v".repeat(max)),
        )
        .unwrap();
    assert_invalid(
        store.create_mcp_server(
            A,
            "k2",
            &with_secret("https://a.example", "Auth", &"v".repeat(max + 1)),
        ),
        "secret_headers",
    );
    // The same header twice, case-insensitively.
    let mut i = with_secret("https://a.example", "Auth", "v");
    i.config.headers = Some(BTreeMap::from([("auth".into(), "plain".into())]));
    assert_invalid(store.create_mcp_server(A, "d1", &i), "secret_headers");
    assert!(store.secret(A, "mcp-k2-auth").unwrap().is_none());
    assert!(store.secret(A, "mcp-d1-auth").unwrap().is_none());

    // Discovered tools: names of 128 bytes, descriptions of 16 KiB.
    let long = "t".repeat(MAX_TOOL_NAME_BYTES);
    mcp::check_tools(&[tool(&long, &"d".repeat(MAX_DESCRIPTION_BYTES))]).unwrap();
    assert_invalid(mcp::check_tools(&[tool(&format!("{long}t"), "d")]), "tools");
    assert_invalid(
        mcp::check_tools(&[tool("t", &"d".repeat(MAX_DESCRIPTION_BYTES + 1))]),
        "tools",
    );
    assert_invalid(mcp::check_tools(&[tool("t", "d"), tool("t", "e")]), "tools");
    assert_invalid(mcp::check_tools(&[tool("a b", "d")]), "tools");
    let mut no_schema = tool("t", "d");
    no_schema.input_schema = None;
    mcp::check_tools(&[no_schema.clone()]).unwrap();
    let doc = mcp::projected_document("srv", &no_schema);
    assert_eq!(doc.input, map([("type", s("object"))]));
    assert_eq!(doc.name, "srv__t");
}

#[test]
fn delete_removes_owned_secrets_whatever_case_another_implementation_named_them_with() {
    let (_d, store, _clock) = open();
    // Another implementation kept the header's case in the owned secret's name.
    store
        .set_secret(A, "mcp-docs-Authorization", b"Bearer abc", None)
        .unwrap();
    store
        .set_secret(A, "MCP-DOCS-X-API-KEY", b"k", None)
        .unwrap();
    store.set_secret(A, "unrelated", b"u", None).unwrap();
    let mut i = input("https://docs.example/mcp");
    i.config.secret_refs = Some(BTreeMap::from([
        ("Authorization".into(), "mcp-docs-Authorization".into()),
        ("X-Api-Key".into(), "MCP-DOCS-X-API-KEY".into()),
        ("X-Other".into(), "unrelated".into()),
    ]));
    store.create_mcp_server(A, "docs", &i).unwrap();
    let deletion = store.delete_mcp_server(A, "docs").unwrap();
    assert_eq!(deletion.secrets_deleted, 2);
    let names: Vec<String> = store
        .secrets(A)
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(
        names,
        ["unrelated"],
        "a secret the server does not own stays"
    );
}
