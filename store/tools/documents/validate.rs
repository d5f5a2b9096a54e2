//! The checks an authored tool document passes before it is stored: the name pattern, the
//! description and source caps, the JSON-Schema shape of its input and output schemas, and what
//! each kind carries.
//!
//! Invariant: every check is total (schemas nest at most [`MAX_SCHEMA_DEPTH`] deep, so checking
//! never recurses without bound) and fails with [`Error::Invalid`](crate::Error::Invalid) naming
//! the field, never with a panic.

use crate::error::Result;
use crate::payload::{Ipld, ToolDocument};
use crate::values::check::invalid;

use super::encoding::row_kind;
use super::Kind;

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

/// Checks a tool name against `^[a-z][a-z0-9_-]{1,63}$`.
///
/// # Errors
/// [`Error::Invalid`](crate::Error::Invalid) (`name`).
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
/// [`Error::Invalid`](crate::Error::Invalid) naming the field (`name`, `kind`, `description`,
/// `source`, `binding`, `input`, `output`).
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
/// [`Error::Invalid`](crate::Error::Invalid) naming `field`, the reason starting with the JSON
/// pointer of the offending value (for example `/properties/q/type`).
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
