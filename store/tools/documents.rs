//! Tool documents (`tool_documents`): their canonical bytes and CID, the checks an authored
//! document passes before it is stored, builtins materialized from the caller's registry, and
//! lambdas.
//!
//! This module owns the one byte form of a tool document and so its version. Invariants:
//! - `doc_cbor` is [`encode_document`] of the document and `cid` is [`cid_of`] those exact bytes:
//!   every writer in this crate goes through [`Encoded`], so a row's CID always matches its bytes,
//!   equal documents have equal CIDs and any edit changes it;
//! - nothing reaches the table unchecked: lambdas and builtins pass [`validate_document`], MCP
//!   projections ([`crate::mcp`]) were checked when their discovery was recorded;
//! - names are held first come, except builtins: a lambda may not take a builtin's or a verb's
//!   name, an MCP projection never replaces a lambda (or a builtin), and a lambda never replaces
//!   an MCP projection; builtins are never deleted by a caller, only disabled;
//! - a reconciliation ([`Store::ensure_builtin_tools`], the MCP projection sync) first plans
//!   against what is stored and writes nothing when nothing differs; otherwise it re-plans and
//!   applies inside one `BEGIN IMMEDIATE` transaction, so a concurrent writer cannot slip
//!   between the comparison and the write.

use std::collections::{BTreeMap, HashMap};

use rusqlite::{Connection, TransactionBehavior};
use sha2::{Digest, Sha256};

use crate::cbor::{self, Cbor};
use crate::error::{Error, Result};
use crate::payload::{Ipld, ToolDocument, ToolKind};
use crate::schema::{agents, tool_documents};
use crate::{accounts, query, Store};

pub use crate::schema::tool_documents::{Kind, Row};

/// The longest tool name, in characters (`^[a-z][a-z0-9_-]{1,63}$`).
pub const MAX_NAME_LEN: usize = 64;
/// The shortest tool name, in characters.
pub const MIN_NAME_LEN: usize = 2;
/// The largest `description`, in UTF-8 bytes (16 KiB).
pub const MAX_DESCRIPTION_BYTES: usize = 16 * 1024;
/// The largest lambda `source`, in UTF-8 bytes (256 KiB).
pub const MAX_SOURCE_BYTES: usize = 256 * 1024;
/// The deepest nesting of schemas inside an `input` or `output` schema (the top level is depth
/// 1). Deeper schemas are refused, so checking never recurses without bound.
pub const MAX_SCHEMA_DEPTH: usize = 32;

/// The agent's verbs, which no lambda may be named after (the ones the description names).
pub const VERBS: &[&str] = &[
    "call",
    "continue_session",
    "delegate",
    "execute",
    "plan",
    "read",
    "status",
    "write",
];

/// The JSON-Schema type names a `type` keyword may hold.
const SCHEMA_TYPES: &[&str] = &[
    "array", "boolean", "integer", "null", "number", "object", "string",
];

/// A tool document encoded once: its canonical bytes and the CID over them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// The document's name.
    pub name: String,
    /// The document's kind.
    pub kind: Kind,
    /// [`encode_document`] of the document.
    pub bytes: Vec<u8>,
    /// [`cid_of`] the bytes.
    pub cid: String,
}

impl Encoded {
    /// Encodes `doc` and computes its CID. The document is not validated (see
    /// [`validate_document`]).
    ///
    /// # Errors
    /// [`Error::Invalid`] (`kind`) for a kind outside builtin, lambda and mcp; [`Error::Cbor`]
    /// when the document has no canonical encoding (an `extra` key that repeats a field).
    pub fn new(doc: &ToolDocument) -> Result<Encoded> {
        let kind = row_kind(&doc.kind)?;
        let bytes = encode_document(doc)?;
        let cid = cid_of(&bytes);
        Ok(Encoded {
            name: doc.name.clone(),
            kind,
            bytes,
            cid,
        })
    }
}

/// What a reconciliation changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolSync {
    /// Documents inserted.
    pub inserted: usize,
    /// Documents rewritten because their CID changed.
    pub rewritten: usize,
    /// Documents deleted because they are no longer wanted.
    pub deleted: usize,
    /// `(agent id, name)` of wanted documents not written because another kind holds the name
    /// (a lambda, which wins over a projection and keeps its name against a new builtin).
    pub shadowed: Vec<(String, String)>,
}

impl ToolSync {
    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.inserted == 0 && self.rewritten == 0 && self.deleted == 0
    }

    /// Adds `other`'s counts and shadowed names to these.
    pub(crate) fn add(&mut self, other: ToolSync) {
        self.inserted += other.inserted;
        self.rewritten += other.rewritten;
        self.deleted += other.deleted;
        self.shadowed.extend(other.shadowed);
    }
}

/// The canonical DAG-CBOR bytes of `doc`, the bytes its CID is over.
///
/// Map keys are sorted length-first whatever order the input had, and an absent optional field
/// is left out (see [`crate::payload`]), as the TypeScript server writes documents, so a
/// document has the same bytes, and CID, on both, and decoding the bytes and encoding the result
/// gives the same bytes.
///
/// # Errors
/// [`Error::Cbor`] when the document has no canonical encoding (an `extra` key that repeats a
/// field, a non-finite float).
pub fn encode_document(doc: &ToolDocument) -> Result<Vec<u8>> {
    Ok(cbor::to_vec(doc)?)
}

/// The CIDv1 of DAG-CBOR `bytes` in its usual text form: multibase base32 (lower case, no
/// padding, prefix `b`) of `varint(1) varint(0x71 dag-cbor) varint(0x12 sha2-256) varint(32)
/// sha256(bytes)`. Every varint here is below 0x80, so each is its one byte. The result starts
/// with `bafyrei`.
pub fn cid_of(bytes: &[u8]) -> String {
    let mut raw = [0u8; 36];
    raw[..4].copy_from_slice(&[0x01, 0x71, 0x12, 0x20]);
    raw[4..].copy_from_slice(&Sha256::digest(bytes));
    let mut out = String::with_capacity(1 + (raw.len() * 8).div_ceil(5));
    out.push('b');
    base32_lower(&raw, &mut out);
    out
}

/// RFC 4648 base32, lower-case alphabet, without padding.
fn base32_lower(bytes: &[u8], out: &mut String) {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut buffer: u32 = 0;
    let mut bits = 0;
    for &byte in bytes {
        buffer = (buffer << 8) | u32::from(byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHABET[((buffer >> bits) & 31) as usize] as char);
        }
        buffer &= (1 << bits) - 1;
    }
    if bits > 0 {
        out.push(ALPHABET[((buffer << (5 - bits)) & 31) as usize] as char);
    }
}

/// The row kind of a document kind; a kind this version does not know cannot be stored.
fn row_kind(kind: &ToolKind) -> Result<Kind> {
    match kind {
        ToolKind::Builtin => Ok(Kind::Builtin),
        ToolKind::Lambda => Ok(Kind::Lambda),
        ToolKind::Mcp => Ok(Kind::Mcp),
        ToolKind::Other(other) => Err(invalid(
            "kind",
            format!("{other:?} is not one of builtin, lambda, mcp"),
        )),
    }
}

fn invalid(field: &'static str, reason: impl Into<String>) -> Error {
    Error::Invalid {
        field,
        reason: reason.into(),
    }
}

/// Checks a tool name against `^[a-z][a-z0-9_-]{1,63}$`.
///
/// # Errors
/// [`Error::Invalid`] (`name`).
pub fn check_name(name: &str) -> Result<()> {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    let rest_ok =
        chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    // All accepted characters are ASCII, so the byte length is the character count.
    if first_ok && rest_ok && (MIN_NAME_LEN..=MAX_NAME_LEN).contains(&name.len()) {
        Ok(())
    } else {
        Err(invalid(
            "name",
            format!("{name:?} must match ^[a-z][a-z0-9_-]{{1,63}}$"),
        ))
    }
}

/// Checks an authored document (a lambda, or a builtin from the shipped registry) before it is
/// stored: the name pattern, the kind, the description and source caps, the input and output
/// schemas' shape ([`check_schema_shape`]), and what each kind carries (a builtin a `binding` and
/// no `source`, a lambda a non-empty `source` and no `binding`). MCP projections are not
/// authored; their checks run when a discovery is recorded.
///
/// # Errors
/// [`Error::Invalid`] naming the field (`name`, `kind`, `description`, `source`, `binding`,
/// `input`, `output`).
pub fn validate_document(doc: &ToolDocument) -> Result<()> {
    check_name(&doc.name)?;
    let kind = row_kind(&doc.kind)?;
    check_description(&doc.description)?;
    if let Some(source) = &doc.source {
        if source.len() > MAX_SOURCE_BYTES {
            return Err(invalid(
                "source",
                format!(
                    "is {} bytes, more than the {MAX_SOURCE_BYTES} allowed",
                    source.len()
                ),
            ));
        }
    }
    check_schema_shape("input", &doc.input)?;
    if let Some(output) = doc.output.as_ref().filter(|o| !matches!(o, Ipld::Null)) {
        check_schema_shape("output", output)?;
    }
    let has_binding = doc
        .binding
        .as_ref()
        .is_some_and(|b| !matches!(b, Ipld::Null));
    match kind {
        Kind::Builtin if !has_binding => {
            Err(invalid("binding", "a builtin carries its executor binding"))
        }
        Kind::Builtin if doc.source.is_some() => {
            Err(invalid("source", "a builtin carries no source"))
        }
        Kind::Lambda if doc.source.as_deref().is_none_or(str::is_empty) => {
            Err(invalid("source", "a lambda carries its source"))
        }
        Kind::Lambda if has_binding => Err(invalid("binding", "a lambda carries no binding")),
        Kind::Mcp => Err(invalid(
            "kind",
            "mcp documents are projections of MCP servers, not authored",
        )),
        _ => Ok(()),
    }
}

/// Checks a description against [`MAX_DESCRIPTION_BYTES`].
pub(crate) fn check_description(description: &str) -> Result<()> {
    if description.len() > MAX_DESCRIPTION_BYTES {
        return Err(invalid(
            "description",
            format!(
                "is {} bytes, more than the {MAX_DESCRIPTION_BYTES} allowed",
                description.len()
            ),
        ));
    }
    Ok(())
}

/// Checks that `schema` has the shape of a JSON Schema (draft 4 to 2020-12 keywords): a map at
/// the top; `type` a known type name or a non-empty list of distinct ones; `properties`,
/// `patternProperties`, `$defs`, `definitions` and `dependentSchemas` maps of schemas;
/// `required` a list of distinct strings; `items` a schema or a list of schemas; `prefixItems`,
/// `allOf`, `anyOf` and `oneOf` non-empty lists of schemas; `not`, `if`, `then`, `else`,
/// `contains`, `propertyNames`, `additionalProperties`, `additionalItems`,
/// `unevaluatedProperties` and `unevaluatedItems` schemas; `enum` a non-empty list; the length
/// and count bounds non-negative integers; the numeric bounds numbers; the annotation keywords
/// strings. A nested schema may also be `true` or `false`. Other keywords are left alone. Nesting
/// is capped at [`MAX_SCHEMA_DEPTH`].
///
/// # Errors
/// [`Error::Invalid`] naming `field`, the reason starting with the JSON pointer of the offending
/// value (for example `/properties/q/type`).
pub fn check_schema_shape(field: &'static str, schema: &Ipld) -> Result<()> {
    let mut path = String::new();
    if !matches!(schema, Ipld::Map(_)) {
        return Err(invalid(field, "(root): a schema must be a map"));
    }
    shape(schema, &mut path, 1).map_err(|reason| invalid(field, reason))
}

/// One schema (a map, or a boolean below the top); `path` is its JSON pointer.
fn shape(schema: &Ipld, path: &mut String, depth: usize) -> std::result::Result<(), String> {
    let at = |path: &str, what: &str| {
        format!("{}: {what}", if path.is_empty() { "(root)" } else { path })
    };
    if depth > MAX_SCHEMA_DEPTH {
        return Err(at(
            path,
            &format!("schemas nest deeper than {MAX_SCHEMA_DEPTH} levels"),
        ));
    }
    let map = match schema {
        Ipld::Bool(_) => return Ok(()),
        Ipld::Map(map) => map,
        _ => return Err(at(path, "a schema must be a map or a boolean")),
    };
    for (key, value) in map {
        let len = path.len();
        path.push('/');
        // JSON pointer escaping: `~` then `/`.
        path.push_str(&key.replace('~', "~0").replace('/', "~1"));
        let result = keyword(key, value, path, depth);
        path.truncate(len);
        result?;
    }
    Ok(())
}

/// One keyword of a schema at `path`.
fn keyword(
    key: &str,
    value: &Ipld,
    path: &mut String,
    depth: usize,
) -> std::result::Result<(), String> {
    let fail = |path: &str, what: &str| Err(format!("{path}: {what}"));
    match key {
        "type" => match value {
            Ipld::String(t) if SCHEMA_TYPES.contains(&t.as_str()) => Ok(()),
            Ipld::List(types) if !types.is_empty() => {
                let mut seen = Vec::with_capacity(types.len());
                for t in types {
                    match t {
                        Ipld::String(t) if SCHEMA_TYPES.contains(&t.as_str()) => {
                            if seen.contains(&t) {
                                return fail(path, &format!("repeats the type {t:?}"));
                            }
                            seen.push(t);
                        }
                        _ => return fail(path, "must list JSON-Schema type names"),
                    }
                }
                Ok(())
            }
            _ => fail(
                path,
                "must be a JSON-Schema type name (array, boolean, integer, null, number, object, string) or a non-empty list of them",
            ),
        },
        "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
            let Ipld::Map(entries) = value else {
                return fail(path, "must be a map of schemas");
            };
            for (name, schema) in entries {
                let len = path.len();
                path.push('/');
                path.push_str(&name.replace('~', "~0").replace('/', "~1"));
                let result = shape(schema, path, depth + 1);
                path.truncate(len);
                result?;
            }
            Ok(())
        }
        "required" => {
            let Ipld::List(names) = value else {
                return fail(path, "must be a list of strings");
            };
            let mut seen = Vec::with_capacity(names.len());
            for name in names {
                let Ipld::String(name) = name else {
                    return fail(path, "must be a list of strings");
                };
                if seen.contains(&name) {
                    return fail(path, &format!("repeats {name:?}"));
                }
                seen.push(name);
            }
            Ok(())
        }
        "items" => match value {
            Ipld::List(schemas) => list_of_schemas(schemas, path, depth, true),
            other => shape(other, path, depth + 1),
        },
        "prefixItems" | "allOf" | "anyOf" | "oneOf" => match value {
            Ipld::List(schemas) if !schemas.is_empty() => {
                list_of_schemas(schemas, path, depth, false)
            }
            _ => fail(path, "must be a non-empty list of schemas"),
        },
        "not" | "if" | "then" | "else" | "contains" | "propertyNames"
        | "additionalProperties" | "additionalItems" | "unevaluatedProperties"
        | "unevaluatedItems" => shape(value, path, depth + 1),
        "enum" => match value {
            Ipld::List(values) if !values.is_empty() => Ok(()),
            _ => fail(path, "must be a non-empty list"),
        },
        "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties"
        | "maxProperties" | "minContains" | "maxContains" => match value {
            Ipld::Integer(n) if *n >= 0 => Ok(()),
            _ => fail(path, "must be a non-negative integer"),
        },
        "minimum" | "maximum" => match value {
            Ipld::Integer(_) | Ipld::Float(_) => Ok(()),
            _ => fail(path, "must be a number"),
        },
        // Draft 4 wrote these as booleans next to minimum/maximum.
        "exclusiveMinimum" | "exclusiveMaximum" => match value {
            Ipld::Integer(_) | Ipld::Float(_) | Ipld::Bool(_) => Ok(()),
            _ => fail(path, "must be a number (or, in draft 4, a boolean)"),
        },
        "multipleOf" => match value {
            Ipld::Integer(n) if *n > 0 => Ok(()),
            Ipld::Float(f) if *f > 0.0 => Ok(()),
            _ => fail(path, "must be a number greater than 0"),
        },
        "uniqueItems" => match value {
            Ipld::Bool(_) => Ok(()),
            _ => fail(path, "must be a boolean"),
        },
        "title" | "description" | "$ref" | "$schema" | "$id" | "$comment" | "pattern"
        | "format" => match value {
            Ipld::String(_) => Ok(()),
            _ => fail(path, "must be a string"),
        },
        _ => Ok(()),
    }
}

fn list_of_schemas(
    schemas: &[Ipld],
    path: &mut String,
    depth: usize,
    allow_empty: bool,
) -> std::result::Result<(), String> {
    if schemas.is_empty() && !allow_empty {
        return Err(format!("{path}: must be a non-empty list of schemas"));
    }
    for (i, schema) in schemas.iter().enumerate() {
        let len = path.len();
        path.push('/');
        path.push_str(&i.to_string());
        let result = shape(schema, path, depth + 1);
        path.truncate(len);
        result?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Reconciliation: shared by builtins (here) and MCP projections (crate::mcp).

/// What a stored document is, as far as reconciliation needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Held {
    pub(crate) kind: Kind,
    pub(crate) cid: String,
}

/// One planned write.
#[derive(Debug)]
pub(crate) enum Change<'a> {
    Insert(&'a Encoded),
    Rewrite(&'a Encoded),
    Delete(String),
}

/// The documents of every agent of `account_id` (or only of `agent_id`), by agent then name.
pub(crate) fn held(
    conn: &Connection,
    account_id: &str,
    agent_id: Option<&str>,
) -> Result<HashMap<String, BTreeMap<String, Held>>> {
    let rows = query!(
        "SELECT agent_id, name, kind, cid FROM tool_documents \
         WHERE account_id = ?1 AND (?2 IS NULL OR agent_id = ?2)",
        account_id,
        agent_id
    )
    .fetch_all(conn)?;
    let mut out: HashMap<String, BTreeMap<String, Held>> = HashMap::new();
    for row in rows {
        out.entry(row.agent_id).or_default().insert(
            row.name,
            Held {
                kind: row.kind,
                cid: row.cid,
            },
        );
    }
    Ok(out)
}

/// Plans one agent's documents of kind `kind` towards `wanted`: insert what is missing, rewrite
/// what has another CID, delete documents of `kind` no longer wanted. A name held by another kind
/// is left alone (reported in `shadowed`), except that a builtin takes its name back from an MCP
/// projection.
pub(crate) fn plan<'a>(
    agent_id: &str,
    kind: Kind,
    held: Option<&BTreeMap<String, Held>>,
    wanted: &BTreeMap<&str, &'a Encoded>,
    shadowed: &mut Vec<(String, String)>,
) -> Vec<Change<'a>> {
    let mut changes = Vec::new();
    for (name, doc) in wanted {
        match held.and_then(|h| h.get(*name)) {
            None => changes.push(Change::Insert(doc)),
            Some(h) if h.kind == kind => {
                if h.cid != doc.cid {
                    changes.push(Change::Rewrite(doc));
                }
            }
            Some(h) if kind == Kind::Builtin && h.kind == Kind::Mcp => {
                changes.push(Change::Rewrite(doc))
            }
            Some(_) => shadowed.push((agent_id.to_owned(), (*name).to_owned())),
        }
    }
    if let Some(held) = held {
        for (name, h) in held {
            if h.kind == kind && !wanted.contains_key(name.as_str()) {
                changes.push(Change::Delete(name.clone()));
            }
        }
    }
    changes
}

/// Applies one agent's planned changes inside the caller's transaction. A rewrite keeps the row's
/// `enabled` and `created_at`.
pub(crate) fn apply(
    conn: &Connection,
    account_id: &str,
    agent_id: &str,
    now: i64,
    changes: &[Change<'_>],
) -> Result<ToolSync> {
    let mut sync = ToolSync::default();
    for change in changes {
        match change {
            Change::Insert(doc) => {
                tool_documents::insert(
                    conn,
                    &Row {
                        account_id: account_id.into(),
                        agent_id: agent_id.into(),
                        name: doc.name.clone(),
                        kind: doc.kind,
                        cid: doc.cid.clone(),
                        doc_cbor: Cbor::from_bytes(doc.bytes.clone()),
                        enabled: true,
                        created_at: now,
                        updated_at: now,
                    },
                )?;
                sync.inserted += 1;
            }
            Change::Rewrite(doc) => {
                let doc_cbor = Cbor::<ToolDocument>::from_bytes(doc.bytes.clone());
                query!(
                    "UPDATE tool_documents SET kind = ?1, cid = ?2, doc_cbor = ?3, updated_at = ?4 \
                     WHERE account_id = ?5 AND agent_id = ?6 AND name = ?7",
                    doc.kind,
                    doc.cid,
                    doc_cbor,
                    now,
                    account_id,
                    agent_id,
                    doc.name
                )
                .execute(conn)?;
                sync.rewritten += 1;
            }
            Change::Delete(name) => {
                sync.deleted += tool_documents::delete(conn, account_id, agent_id, name)?;
            }
        }
    }
    Ok(sync)
}

/// Loads the agent `agent_id` of `account_id`.
fn agent_in(conn: &Connection, account_id: &str, agent_id: &str) -> Result<agents::Row> {
    agents::get(conn, account_id, agent_id)?.ok_or_else(|| Error::NotFound {
        what: "agent",
        id: agent_id.into(),
    })
}

/// Validates and encodes a builtin registry, refusing repeated names.
fn encode_registry(registry: &[ToolDocument]) -> Result<Vec<Encoded>> {
    let mut out: Vec<Encoded> = Vec::with_capacity(registry.len());
    for doc in registry {
        if doc.kind != ToolKind::Builtin {
            return Err(invalid(
                "kind",
                format!("registry entry {:?} is not a builtin", doc.name),
            ));
        }
        validate_document(doc)?;
        if out.iter().any(|e| e.name == doc.name) {
            return Err(invalid(
                "name",
                format!("the registry holds {:?} twice", doc.name),
            ));
        }
        out.push(Encoded::new(doc)?);
    }
    Ok(out)
}

/// Plans the builtins of one agent.
fn plan_builtins<'a>(
    conn: &Connection,
    account_id: &str,
    agent_id: &str,
    registry: &'a [Encoded],
    shadowed: &mut Vec<(String, String)>,
) -> Result<Vec<Change<'a>>> {
    let held = held(conn, account_id, Some(agent_id))?;
    let wanted: BTreeMap<&str, &Encoded> = registry.iter().map(|e| (e.name.as_str(), e)).collect();
    Ok(plan(
        agent_id,
        Kind::Builtin,
        held.get(agent_id),
        &wanted,
        shadowed,
    ))
}

impl Store {
    /// Materializes the builtin registry `registry` (the complete shipped set) for the agent: a
    /// missing builtin is inserted (enabled), one whose CID differs is rewritten (keeping
    /// `enabled`), one no longer shipped is deleted. A lambda that already holds a builtin's
    /// name keeps it and is reported in [`ToolSync::shadowed`]; an MCP projection does not.
    /// When everything matches, nothing is written (not even a transaction is begun).
    ///
    /// # Errors
    /// [`Error::Invalid`] for a registry entry that fails [`validate_document`], is not a
    /// builtin, or repeats a name; [`Error::NotFound`] (`agent`); [`Error::Sqlite`] otherwise.
    pub fn ensure_builtin_tools(
        &mut self,
        account_id: &str,
        agent_id: &str,
        registry: &[ToolDocument],
    ) -> Result<ToolSync> {
        let registry = encode_registry(registry)?;
        agent_in(self.conn(), account_id, agent_id)?;
        let mut shadowed = Vec::new();
        if plan_builtins(self.conn(), account_id, agent_id, &registry, &mut shadowed)?.is_empty() {
            return Ok(ToolSync {
                shadowed,
                ..ToolSync::default()
            });
        }
        let now = self.now_ms();
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut shadowed = Vec::new();
        let changes = plan_builtins(&tx, account_id, agent_id, &registry, &mut shadowed)?;
        let mut sync = apply(&tx, account_id, agent_id, now, &changes)?;
        tx.commit()?;
        sync.shadowed = shadowed;
        Ok(sync)
    }

    /// Creates or replaces the lambda `doc.name` of the agent after [`validate_document`]. A
    /// lambda whose CID is unchanged is not rewritten.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the field that fails validation, or `kind` for a document that
    /// is not a lambda, or `name` for a verb's name; [`Error::Conflict`] (`tool`) when a builtin
    /// or an MCP projection holds the name; [`Error::NotFound`] (`agent`); [`Error::Sqlite`]
    /// otherwise.
    pub fn put_lambda_tool(
        &mut self,
        account_id: &str,
        agent_id: &str,
        doc: &ToolDocument,
    ) -> Result<Row> {
        if doc.kind != ToolKind::Lambda {
            return Err(invalid("kind", "put_lambda_tool stores lambdas only"));
        }
        validate_document(doc)?;
        if VERBS.contains(&doc.name.as_str()) {
            return Err(invalid("name", format!("{:?} is a verb's name", doc.name)));
        }
        let encoded = Encoded::new(doc)?;
        let now = self.now_ms();
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        agent_in(&tx, account_id, agent_id)?;
        let row = match tool_documents::get(&tx, account_id, agent_id, &doc.name)? {
            Some(existing) if existing.kind != Kind::Lambda => {
                return Err(Error::Conflict {
                    what: "tool",
                    key: doc.name.clone(),
                    reason: format!(
                        "the name is held by a{} {} document, which a lambda cannot replace",
                        if existing.kind == Kind::Mcp { "n" } else { "" },
                        existing.kind.as_str()
                    ),
                })
            }
            Some(existing) if existing.cid == encoded.cid => existing,
            Some(existing) => {
                let row = Row {
                    cid: encoded.cid,
                    doc_cbor: Cbor::from_bytes(encoded.bytes),
                    updated_at: now,
                    ..existing
                };
                tool_documents::update(&tx, &row)?;
                row
            }
            None => {
                accounts::touch(&tx, account_id, now)?;
                let row = Row {
                    account_id: account_id.into(),
                    agent_id: agent_id.into(),
                    name: encoded.name,
                    kind: Kind::Lambda,
                    cid: encoded.cid,
                    doc_cbor: Cbor::from_bytes(encoded.bytes),
                    enabled: true,
                    created_at: now,
                    updated_at: now,
                };
                tool_documents::insert(&tx, &row)?;
                row
            }
        };
        tx.commit()?;
        Ok(row)
    }

    /// Enables or disables the agent's tool `name` (how a builtin is withheld). Setting the value
    /// it already has writes nothing.
    ///
    /// # Errors
    /// [`Error::NotFound`] (`tool`); [`Error::Sqlite`] otherwise.
    pub fn set_tool_enabled(
        &mut self,
        account_id: &str,
        agent_id: &str,
        name: &str,
        enabled: bool,
    ) -> Result<Row> {
        let now = self.now_ms();
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut row = tool_not_found(tool_documents::get(&tx, account_id, agent_id, name)?, name)?;
        if row.enabled != enabled {
            row.enabled = enabled;
            row.updated_at = now;
            tool_documents::update(&tx, &row)?;
        }
        tx.commit()?;
        Ok(row)
    }

    /// Deletes the agent's lambda `name`; returns whether there was one.
    ///
    /// # Errors
    /// [`Error::ToolNotDeletable`] for a builtin (disable it instead) or an MCP projection (it
    /// goes with its server or the agent's reference); [`Error::Sqlite`] otherwise.
    pub fn delete_tool(&mut self, account_id: &str, agent_id: &str, name: &str) -> Result<bool> {
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let deleted = match tool_documents::get(&tx, account_id, agent_id, name)? {
            None => false,
            Some(row) if row.kind != Kind::Lambda => {
                return Err(Error::ToolNotDeletable {
                    name: name.into(),
                    kind: row.kind.as_str(),
                })
            }
            Some(_) => tool_documents::delete(&tx, account_id, agent_id, name)? > 0,
        };
        tx.commit()?;
        Ok(deleted)
    }

    /// The agent's tool document `name`.
    ///
    /// # Errors
    /// [`Error::Sqlite`], or a stored kind outside the enum.
    pub fn tool(&self, account_id: &str, agent_id: &str, name: &str) -> Result<Option<Row>> {
        tool_documents::get(self.conn(), account_id, agent_id, name)
    }

    /// What exactly the agent can run: after materializing `registry`
    /// ([`Store::ensure_builtin_tools`]) and reconciling the MCP projections
    /// ([`Store::sync_mcp_tools`]), the agent's enabled documents by name, each with the CID that
    /// is its version. Both reconciliations write nothing when nothing changed.
    ///
    /// # Errors
    /// As [`Store::ensure_builtin_tools`] and [`Store::sync_mcp_tools`].
    pub fn agent_tools(
        &mut self,
        account_id: &str,
        agent_id: &str,
        registry: &[ToolDocument],
    ) -> Result<Vec<Row>> {
        self.ensure_builtin_tools(account_id, agent_id, registry)?;
        self.sync_mcp_tools(account_id, Some(agent_id))?;
        let mut rows = tool_documents::list_by_agent_id(self.conn(), account_id, agent_id)?;
        rows.retain(|r| r.enabled);
        rows.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(rows)
    }
}

fn tool_not_found(row: Option<Row>, name: &str) -> Result<Row> {
    row.ok_or_else(|| Error::NotFound {
        what: "tool",
        id: name.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base32_matches_rfc4648_vectors() {
        // RFC 4648 section 10, lower-cased, padding removed.
        for (input, expected) in [
            ("", ""),
            ("f", "my"),
            ("fo", "mzxq"),
            ("foo", "mzxw6"),
            ("foob", "mzxw6yq"),
            ("fooba", "mzxw6ytb"),
            ("foobar", "mzxw6ytboi"),
        ] {
            let mut out = String::new();
            base32_lower(input.as_bytes(), &mut out);
            assert_eq!(out, expected, "{input:?}");
        }
    }

    #[test]
    fn cids_have_the_dag_cbor_sha256_prefix_and_length() {
        let cid = cid_of(b"\xa0");
        assert!(cid.starts_with("bafyrei"), "{cid}");
        assert_eq!(cid.len(), 59);
    }
}
