//! The Rust emitter: deterministic output, the expected items for the real schema, and a
//! fixture project whose emitted code is checked fragment by fragment.

use quote::ToTokens;
use seed_agents_codegen::emit::rust::{render, Options, WriteHelpers, HEADER};
use seed_agents_codegen::{Error, Project};
use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

const RT: &str = "crate::__private";

fn schema_dir() -> PathBuf {
    PathBuf::from(seed_agents_schema::DIR)
}

fn docs() -> BTreeMap<String, String> {
    let mut docs = BTreeMap::new();
    docs.insert(
        "runs.md".to_string(),
        "# runs\n\nA \"quoted\" page.\n".to_string(),
    );
    docs
}

fn parse(source: &str) -> syn::File {
    syn::parse_file(source).expect("the emitted code parses")
}

/// Token text without spaces (and without the trailing comma prettyplease adds where it wraps a
/// long generic argument list), so comparisons do not depend on layout.
fn tokens(t: &impl ToTokens) -> String {
    t.to_token_stream()
        .to_string()
        .replace(' ', "")
        .replace(",>", ">")
}

fn module<'f>(file: &'f syn::File, name: &str) -> &'f [syn::Item] {
    file.items
        .iter()
        .find_map(|item| match item {
            syn::Item::Mod(m) if m.ident == name => Some(&m.content.as_ref().unwrap().1[..]),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no module {name}"))
}

fn function<'i>(items: &'i [syn::Item], name: &str) -> &'i syn::ItemFn {
    items
        .iter()
        .find_map(|item| match item {
            syn::Item::Fn(f) if f.sig.ident == name => Some(f),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no function {name}"))
}

fn has_function(items: &[syn::Item], name: &str) -> bool {
    items
        .iter()
        .any(|item| matches!(item, syn::Item::Fn(f) if f.sig.ident == name))
}

/// `name: Type` of every parameter.
fn params(f: &syn::ItemFn) -> Vec<String> {
    f.sig
        .inputs
        .iter()
        .map(|arg| match arg {
            syn::FnArg::Typed(p) => format!("{}:{}", tokens(&p.pat), tokens(&p.ty)),
            syn::FnArg::Receiver(_) => "self".into(),
        })
        .collect()
}

fn return_type(f: &syn::ItemFn) -> String {
    match &f.sig.output {
        syn::ReturnType::Type(_, t) => tokens(t),
        syn::ReturnType::Default => "()".into(),
    }
}

/// The value of the function's `const SQL`.
fn sql(f: &syn::ItemFn) -> String {
    f.block
        .stmts
        .iter()
        .find_map(|stmt| match stmt {
            syn::Stmt::Item(syn::Item::Const(c)) if c.ident == "SQL" => match &*c.expr {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .unwrap_or_else(|| panic!("{} has no const SQL", f.sig.ident))
}

fn has_doc(attrs: &[syn::Attribute], needle: &str) -> bool {
    attrs.iter().any(|a| match &a.meta {
        syn::Meta::NameValue(nv) if a.path().is_ident("doc") => matches!(
            &nv.value,
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) if s.value().contains(needle)
        ),
        _ => false,
    })
}

fn item_enum<'i>(items: &'i [syn::Item], name: &str) -> &'i syn::ItemEnum {
    items
        .iter()
        .find_map(|item| match item {
            syn::Item::Enum(e) if e.ident == name => Some(e),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no enum {name}"))
}

/// `field: Type` of every field of `Row`.
fn row_fields(items: &[syn::Item]) -> Vec<String> {
    let row = items
        .iter()
        .find_map(|item| match item {
            syn::Item::Struct(s) if s.ident == "Row" => Some(s),
            _ => None,
        })
        .expect("a Row struct");
    row.fields
        .iter()
        .map(|f| format!("{}:{}", f.ident.as_ref().unwrap(), tokens(&f.ty)))
        .collect()
}

fn const_array_len(file: &syn::File, name: &str) -> usize {
    let expr = file
        .items
        .iter()
        .find_map(|item| match item {
            syn::Item::Const(c) if c.ident == name => Some(&*c.expr),
            syn::Item::Static(s) if s.ident == name => Some(&*s.expr),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no const {name}"));
    match expr {
        syn::Expr::Reference(r) => match &*r.expr {
            syn::Expr::Array(a) => a.elems.len(),
            other => panic!("{name} is not an array: {}", tokens(other)),
        },
        other => panic!("{name} is not a reference: {}", tokens(other)),
    }
}

#[test]
fn output_is_deterministic() {
    let root = schema_dir();
    let project = Project::load(&root).unwrap();
    let first = render(&project, RT, &docs(), WriteHelpers::Public).unwrap();
    let second = render(&project, RT, &docs(), WriteHelpers::Public).unwrap();
    assert!(first == second, "two renders of one project differ");
    let reloaded = Project::load(&root).unwrap();
    let third = render(&reloaded, RT, &docs(), WriteHelpers::Public).unwrap();
    assert!(first == third, "renders of two loads of one project differ");
}

#[test]
fn workspace_schema_items() {
    let project = Project::load(schema_dir()).unwrap();
    let out = render(&project, RT, &docs(), WriteHelpers::Public).unwrap();
    assert!(out.starts_with(&format!("{HEADER}\n")));
    assert_eq!(
        HEADER,
        "// @generated by seed-agents-codegen from schema.sql and migrations/. Do not edit."
    );
    assert!(!out.contains("#!["), "no inner attributes");
    let file = parse(&out);
    assert!(file.attrs.is_empty());

    let versions = project.versions.len();
    assert_eq!(const_array_len(&file, "MIGRATIONS"), versions);
    assert_eq!(const_array_len(&file, "FINGERPRINTS"), versions);
    assert_eq!(const_array_len(&file, "MODELS"), versions);
    assert_eq!(const_array_len(&file, "DOCS"), 1);
    assert_eq!(const_array_len(&file, "TABLES"), project.fresh.tables.len());
    assert!(out.contains(&format!(
        "pub const SCHEMA_VERSION: u32 = {};",
        project.latest_version()
    )));
    assert!(out.contains(&project.versions[versions - 1].fingerprint()));
    assert!(out.contains("name: \"0000_genesis\""));
    assert!(out.contains("crate::__private::EmbeddedMigration {"));

    // runs: enums, scoping, index-prefix helpers.
    let runs = module(&file, "runs");
    let status = item_enum(runs, "Status");
    assert_eq!(status.variants.len(), 7);
    assert_eq!(status.variants[0].ident, "Queued");
    assert!(has_doc(&status.variants[0].attrs, "`queued`"));
    let get = function(runs, "get");
    assert_eq!(
        params(get),
        [
            "conn:&implcrate::__private::Executor",
            "account_id:&str",
            "id:&str"
        ]
    );
    assert_eq!(return_type(get), "crate::__private::Result<Option<Row>>");
    assert!(sql(get).ends_with(r#"FROM "runs" WHERE "account_id" = ?1 AND "id" = ?2"#));
    let by_status = function(runs, "list_by_status_and_queue");
    assert_eq!(
        params(by_status)[1..],
        ["account_id:&str", "status:Status", "queue:Queue"]
    );
    assert!(sql(by_status).ends_with(
        r#"WHERE "account_id" = ?1 AND "status" = ?2 AND "queue" = ?3 ORDER BY "not_before" ASC, "created_at" ASC, "id" ASC"#
    ));
    // runs_by_parent_tool_call's first prefix repeats runs_by_parent's.
    assert!(has_function(runs, "list_by_parent_run_id"));
    assert!(has_function(
        runs,
        "list_by_parent_run_id_and_parent_tool_call_id"
    ));
    let by_account = function(runs, "list_by_account_id");
    assert_eq!(params(by_account)[1..], ["account_id:&str"]);
    assert!(sql(by_account)
        .ends_with(r#"WHERE "account_id" = ?1 ORDER BY "created_at" DESC, "id" ASC"#));
    // Proper prefixes of the primary key and of unique keys list too; a whole key does not.
    let journal = module(&file, "run_journal");
    assert!(sql(function(journal, "list_by_run_id"))
        .ends_with(r#"WHERE "run_id" = ?1 ORDER BY "seq" ASC"#));
    let events = module(&file, "session_events");
    assert!(sql(function(events, "list_by_session_id"))
        .ends_with(r#"WHERE "session_id" = ?1 ORDER BY "seq" ASC"#));
    let collaborators = module(&file, "agent_collaborators");
    assert!(!has_function(collaborators, "list_by_agent_id"));
    let update = function(runs, "update");
    assert_eq!(params(update)[1..], ["row:&Row"]);
    assert!(!sql(update).contains(r#""account_id" = ?1"#));
    assert!(sql(update).contains(r#"WHERE "account_id" = ?33 AND "id" = ?34"#));
    assert!(has_doc(&update.attrs, "# Errors"));

    // agents: bool and cbor fields.
    let agents = module(&file, "agents");
    let fields = row_fields(agents);
    assert!(fields.contains(&"public_read:bool".to_string()));
    assert!(fields.contains(&"activity_at:Option<i64>".to_string()));
    assert!(
        fields.contains(
            &"definition_cbor:crate::__private::Cbor<crate::__private::payload::AgentDefinition>"
                .to_string()
        ),
        "{fields:?}"
    );

    // sessions: a nullable enum, scoped list helper.
    let sessions = module(&file, "sessions");
    assert!(row_fields(sessions).contains(&"thoroughness:Option<Thoroughness>".to_string()));
    assert!(row_fields(sessions).contains(&"title_source:TitleSource".to_string()));
    let by_agent = function(sessions, "list_by_agent_id");
    assert_eq!(params(by_agent)[1..], ["account_id:&str", "agent_id:&str"]);
    assert!(sql(by_agent).ends_with(
        r#"FROM "sessions" WHERE "account_id" = ?1 AND "agent_id" = ?2 ORDER BY "updated_at" DESC, "id" ASC"#
    ));

    // model_providers: the unique key, a keyword column.
    let providers = module(&file, "model_providers");
    let by_name = function(providers, "get_by_name");
    assert_eq!(params(by_name)[1..], ["account_id:&str", "name:&str"]);
    assert!(sql(by_name).ends_with(r#"WHERE "account_id" = ?1 AND "name" = ?2"#));
    assert!(row_fields(providers).contains(&"r#type:String".to_string()));
    let columns = item_enum(providers, "Column");
    assert_eq!(columns.variants[0].ident, "Table");
    assert_eq!(columns.variants[4].ident, "Type");

    // Unscoped tables.
    let accounts = module(&file, "accounts");
    assert_eq!(params(function(accounts, "get"))[1..], ["id:&str"]);
    let config = module(&file, "server_config");
    assert_eq!(
        sql(function(config, "delete")),
        r#"DELETE FROM "server_config" WHERE "key" = ?1"#
    );

    // A key containing account_id does not repeat it, and account_id comes first.
    let collaborators = module(&file, "agent_collaborators");
    let get = function(collaborators, "get");
    assert_eq!(params(get)[1..], ["account_id:&str", "agent_id:&str"]);
    assert!(sql(get).ends_with(r#"WHERE "account_id" = ?1 AND "agent_id" = ?2"#));

    // Docs with `<...>` outside code spans are escaped for rustdoc.
    assert!(out.contains(r"schedule:\<triggerId>"));
}

const FIXTURE_SCHEMA: &str = r#"-- A fixture schema.

-- Widgets of an account.
CREATE TABLE widgets (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    -- What the widget is.
    -- @enum(OWNER, budget-pause, tool_call)
    kind TEXT NOT NULL,
    -- @enum(low, high)
    level TEXT,
    -- @bool
    enabled INTEGER NOT NULL DEFAULT 1,
    -- @bool
    pinned INTEGER,
    -- @cbor(Payload)
    body_cbor BLOB,
    type TEXT NOT NULL,
    weight REAL,
    -- @timestamp
    created_at INTEGER NOT NULL,
    UNIQUE (account_id, type)
) WITHOUT ROWID;

CREATE INDEX widgets_by_kind ON widgets (account_id, kind, created_at DESC);
CREATE INDEX widgets_by_level ON widgets (level) WHERE level IS NOT NULL;

-- Notes, not account-owned.
CREATE TABLE notes (
    id INTEGER PRIMARY KEY,
    body TEXT NOT NULL,
    body_len INTEGER GENERATED ALWAYS AS (length(body)) VIRTUAL
);

CREATE UNIQUE INDEX notes_by_body ON notes (body);
"#;

const FIXTURE_GENESIS: &str = r#"CREATE TABLE widgets (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    level TEXT,
    enabled INTEGER NOT NULL DEFAULT 1,
    pinned INTEGER,
    body_cbor BLOB,
    type TEXT NOT NULL,
    weight REAL,
    created_at INTEGER NOT NULL,
    UNIQUE (account_id, type)
) WITHOUT ROWID;
CREATE INDEX widgets_by_kind ON widgets (account_id, kind, created_at DESC);
CREATE INDEX widgets_by_level ON widgets (level) WHERE level IS NOT NULL;
CREATE TABLE notes (
    id INTEGER PRIMARY KEY,
    body TEXT NOT NULL,
    body_len INTEGER GENERATED ALWAYS AS (length(body)) VIRTUAL
);
CREATE UNIQUE INDEX notes_by_body ON notes (body);
"#;

fn fixture(schema: &str, genesis: &str) -> (tempfile::TempDir, Project) {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("schema.sql"), schema).unwrap();
    fs::create_dir(dir.path().join("migrations")).unwrap();
    fs::write(
        dir.path().join("migrations").join("0000_genesis.sql"),
        genesis,
    )
    .unwrap();
    let project = Project::load(dir.path()).unwrap();
    (dir, project)
}

#[test]
fn fixture_fragments() {
    let (_dir, project) = fixture(FIXTURE_SCHEMA, FIXTURE_GENESIS);
    assert_eq!(
        project.warnings.len(),
        1,
        "the missing lock is only a warning"
    );
    let out = render(
        &project,
        "crate::rt",
        &BTreeMap::new(),
        WriteHelpers::Public,
    )
    .unwrap();
    let file = parse(&out);

    let fragments = [
        // Enum with PascalCase variants, parse and as_str.
        "pub enum Kind {",
        "Owner,",
        "BudgetPause,",
        "ToolCall,",
        r#""OWNER" => Some(Self::Owner),"#,
        r#""budget-pause" => Some(Self::BudgetPause),"#,
        r#"Self::ToolCall => "tool_call","#,
        "pub const ALL: &'static [Self] = &[",
        "pub fn parse(s: &str) -> Option<Self> {",
        "impl ::core::fmt::Display for Kind {",
        "impl crate::rt::rusqlite::ToSql for Kind {",
        "#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]",
        // Values decode through the runtime's FromColumn, which types enum and bool errors.
        "impl crate::rt::FromColumn for Kind {",
        "crate::rt::enum_from_column(row, idx, table, column, Self::parse)",
        "impl crate::rt::BindsTo<Option<Level>> for Level {}",
        "impl crate::rt::CastsTo<String> for Level {}",
        r#"pinned: crate::rt::FromColumn::from_column(row, 5, TABLE, "pinned")?"#,
        // Row: Option exactly on nullable columns.
        "pub level: Option<Level>,",
        "pub kind: Kind,",
        "pub enabled: bool,",
        "pub pinned: Option<bool>,",
        "pub body_cbor: Option<crate::rt::Cbor<crate::rt::payload::Payload>>,",
        "pub r#type: String,",
        "pub weight: Option<f64>,",
        "pub created_at: i64,",
        "#[derive(Debug, Clone, PartialEq)]",
        "/// What the widget is.",
        "/// SQL: `kind TEXT NOT NULL`, annotated `@enum(OWNER, budget-pause, tool_call)`.",
        // Column lists and sea-query identifiers.
        r#"pub const COLUMN_LIST: &str = r#""id", "account_id", "kind""#,
        "impl crate::rt::sea_query::Iden for Column {",
        "::std::borrow::Cow::Borrowed(self.name())",
        "Self::Table => TABLE,",
        r#"Self::Type => "type","#,
        // Account scoping.
        r#"WHERE "account_id" = ?1 AND "id" = ?2"#,
        r#"WHERE "account_id" = ?1 AND "type" = ?2"#,
        r#"WHERE "account_id" = ?1 AND "kind" = ?2 ORDER BY "created_at" DESC, "id" ASC"#,
        // Both dialects, run through the checked-query runtime.
        r#"WHERE "account_id" = $1 AND "id" = $2"#,
        "crate::rt::Query::new(SQL, PG_SQL, params, Row::from_row)",
        "pub mod widgets {",
        "/// Widgets of an account.",
    ];
    for fragment in fragments {
        assert!(out.contains(fragment), "missing `{fragment}` in:\n{out}");
    }

    let widgets = module(&file, "widgets");
    let names: Vec<String> = widgets
        .iter()
        .filter_map(|item| match item {
            syn::Item::Fn(f) => Some(f.sig.ident.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(
        names,
        [
            "get",
            "get_by_type",
            "list_by_account_id",
            "list_by_kind",
            "count_all",
            "insert",
            "update",
            "delete"
        ],
        "the partial index gets no helper, no prefix ends on a timestamp, and count_all is the one unscoped helper"
    );
    assert_eq!(
        params(function(widgets, "get_by_type"))[1..],
        ["account_id:&str", "r#type:&str"]
    );
    assert_eq!(
        params(function(widgets, "list_by_kind"))[1..],
        ["account_id:&str", "kind:Kind"]
    );
    assert!(!has_function(widgets, "list_by_kind_and_created_at"));
    assert_eq!(
        sql(function(widgets, "update")),
        r#"UPDATE "widgets" SET "kind" = ?1, "level" = ?2, "enabled" = ?3, "pinned" = ?4, "body_cbor" = ?5, "type" = ?6, "weight" = ?7, "created_at" = ?8 WHERE "account_id" = ?9 AND "id" = ?10"#
    );

    // No account_id: no scoping; a generated column is read but never written.
    let notes = module(&file, "notes");
    assert_eq!(
        row_fields(notes),
        ["id:Option<i64>", "body:String", "body_len:Option<i64>"]
    );
    assert_eq!(params(function(notes, "get"))[1..], ["id:i64"]);
    assert_eq!(
        sql(function(notes, "get_by_body")),
        r#"SELECT "id", "body", "body_len" FROM "notes" WHERE "body" = ?1"#
    );
    assert_eq!(
        sql(function(notes, "insert")),
        r#"INSERT INTO "notes" ("id", "body") VALUES (?1, ?2)"#
    );
    assert_eq!(
        sql(function(notes, "update")),
        r#"UPDATE "notes" SET "body" = ?1 WHERE "id" = ?2"#
    );
    assert!(out.contains(r#"pub const COLUMNS: &[&str] = &["id", "body", "body_len"];"#));
}

#[test]
fn enum_values_that_collide_are_an_annotation_error() {
    let schema = "CREATE TABLE t (\n    id TEXT PRIMARY KEY,\n    -- @enum(a_b, a-b)\n    k TEXT NOT NULL\n) WITHOUT ROWID;\n";
    let genesis = "CREATE TABLE t (id TEXT PRIMARY KEY, k TEXT NOT NULL) WITHOUT ROWID;\n";
    let (_dir, project) = fixture(schema, genesis);
    match render(
        &project,
        "crate::rt",
        &BTreeMap::new(),
        WriteHelpers::Public,
    ) {
        Err(Error::Annotation { line, message, .. }) => {
            assert_eq!(line, 4);
            assert!(message.contains("`a_b` and `a-b`"), "{message}");
        }
        other => panic!("expected an annotation error, got {other:?}"),
    }
}

#[test]
fn a_bad_runtime_path_is_an_emit_error() {
    let (_dir, project) = fixture(FIXTURE_SCHEMA, FIXTURE_GENESIS);
    assert!(matches!(
        render(
            &project,
            "not a path",
            &BTreeMap::new(),
            WriteHelpers::Public
        ),
        Err(Error::Emit { .. })
    ));
}

#[test]
fn write_helpers_can_be_kept_inside_the_including_crate() {
    let project = Project::load(schema_dir()).unwrap();
    let visibility = |out: &str, name: &str| {
        let file = parse(out);
        let f = function(module(&file, "runs"), name);
        tokens(&f.vis)
    };
    let public = render(&project, RT, &docs(), WriteHelpers::Public).unwrap();
    let private = render(&project, RT, &docs(), WriteHelpers::Crate).unwrap();
    for write in ["insert", "update", "delete"] {
        assert_eq!(visibility(&public, write), "pub", "{write}");
        assert_eq!(visibility(&private, write), "pub(crate)", "{write}");
    }
    for read in ["get", "list_by_account_id", "count_all"] {
        assert_eq!(visibility(&private, read), "pub", "{read}");
    }
}

#[test]
fn serde_support_is_emitted_only_under_the_named_feature() {
    let schema = "CREATE TABLE t (\n    id TEXT PRIMARY KEY,\n    fooBar TEXT,\n    -- @enum(a, b-c)\n    k TEXT NOT NULL\n) WITHOUT ROWID;\n";
    let genesis =
        "CREATE TABLE t (id TEXT PRIMARY KEY, fooBar TEXT, k TEXT NOT NULL) WITHOUT ROWID;\n";
    let (_dir, project) = fixture(schema, genesis);
    let plain = render(
        &project,
        "crate::rt",
        &BTreeMap::new(),
        WriteHelpers::Public,
    )
    .unwrap();
    assert!(
        !plain.contains("serde"),
        "no serde code by default:\n{plain}"
    );

    let options = Options {
        writes: WriteHelpers::Public,
        serde_feature: Some("wire".into()),
        ..Options::default()
    };
    let out = render(&project, "crate::rt", &BTreeMap::new(), options).unwrap();
    let compact: String = out.split_whitespace().collect();
    for fragment in [
        // Rows derive through the runtime's serde, under the includer's feature.
        r#"#[cfg_attr(feature="wire",derive(crate::rt::serde::Serialize,crate::rt::serde::Deserialize),serde(crate="crate::rt::serde"))]pubstructRow{"#,
        // A field is named by its column: renamed only where the Rust name differs.
        r#"#[cfg_attr(feature="wire",serde(rename="fooBar"))]pubfoo_bar:Option<String>,"#,
        "pubk:K,",
        // Enums are their stored text.
        r#"#[cfg(feature="wire")]implcrate::rt::serde::SerializeforK{"#,
        "serializer.serialize_str(self.as_str())",
        r#"#[cfg(feature="wire")]impl<'de>crate::rt::serde::Deserialize<'de>forK{"#,
        // Anything else is serde's unknown-variant error listing the stored texts.
        "::unknown_variant(",
        r#"&s,&["a","b-c"]"#,
    ] {
        assert!(
            compact.contains(fragment),
            "missing `{fragment}` in:\n{out}"
        );
    }
    assert_eq!(compact.matches("serde(rename").count(), 1, "{out}");
}
