//! The typing layer: the Rust name and type of every table and column, resolved once from the
//! model and the annotations, for both the emitter ([`crate::emit::rust`]) and the query checker
//! ([`crate::query`]).
//!
//! Invariant: a column has one Rust type, whoever asks, and two columns (or two `@enum` values)
//! that would take the same Rust name are an annotation error naming the `schema.sql` line.

use crate::annotations::{Annotations, ColumnKind, TableDoc};
use crate::ident::{ident, pascal_case, snake_case};
use crate::model::{Affinity, Column, Table};
use crate::{Baseline, Error, Result};
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};
use std::collections::BTreeMap;
use std::path::Path;

/// One column with the Rust names derived from it.
pub(crate) struct TypedColumn<'a> {
    pub(crate) col: &'a Column,
    pub(crate) doc: &'a str,
    pub(crate) kind: Option<&'a ColumnKind>,
    /// Field of `Row`.
    pub(crate) field: Ident,
    /// Parameter name in helpers.
    pub(crate) param: Ident,
    /// Variant of `Column`.
    pub(crate) variant: Ident,
    /// The enum of an `@enum` column with its (value, variant) pairs.
    pub(crate) enumeration: Option<(Ident, Vec<(String, Ident)>)>,
}

/// Names the generated helpers use for their own locals and parameters.
const RESERVED_LOCALS: &[&str] = &["conn", "row", "rows", "stmt", "out", "value"];

/// Type names a generated enum must not take (they are used unqualified in the module).
const RESERVED_TYPES: &[&str] = &[
    "Row", "Column", "Self", "Option", "Some", "None", "Result", "Ok", "Err", "String", "Vec",
    "Box",
];

/// A table with the Rust names and types of its columns.
pub(crate) struct TypedTable<'a> {
    pub(crate) table: &'a Table,
    pub(crate) doc: Option<&'a TableDoc>,
    pub(crate) columns: Vec<TypedColumn<'a>>,
    /// The table has an `account_id` column: every helper is scoped to one account.
    pub(crate) scoped: bool,
}

impl<'a> TypedTable<'a> {
    pub(crate) fn new(
        annotations: &'a Annotations,
        schema_path: &Path,
        table: &'a Table,
    ) -> Result<Self> {
        let doc = annotations.tables.get(&table.name);
        let mut columns = Vec::new();
        let mut fields = BTreeMap::new();
        let mut variants = BTreeMap::new();
        let mut enums = BTreeMap::new();
        for col in table.ordered_columns() {
            let cdoc = doc.and_then(|d| d.columns.get(&col.name));
            let line = cdoc.map_or(doc.map_or(0, |d| d.line), |d| d.line);
            let kind = cdoc.and_then(|d| d.kind.as_ref());
            let snake = snake_case(&col.name);
            let field = ident(&snake);
            let param = if RESERVED_LOCALS.contains(&snake.as_str()) {
                format_ident!("{}_", snake)
            } else {
                field.clone()
            };
            let mut pascal = pascal_case(&col.name);
            if pascal == "Table" || pascal == "Self" {
                pascal.push_str("Column");
            }
            let variant = format_ident!("{}", pascal);
            let clash = |what: &str, other: &str| {
                annotation_error(
                    schema_path,
                    line,
                    format!(
                        "columns {t}.{other} and {t}.{} both become the Rust {what} `{}`; rename one",
                        col.name,
                        if what == "field" { &snake } else { &pascal },
                        t = table.name
                    ),
                )
            };
            if let Some(other) = fields.insert(snake.clone(), col.name.clone()) {
                return Err(clash("field", &other));
            }
            if let Some(other) = variants.insert(pascal.clone(), col.name.clone()) {
                return Err(clash("identifier variant", &other));
            }
            let enumeration = match kind {
                Some(ColumnKind::Enum(values)) => {
                    let mut name = pascal_case(&col.name);
                    if RESERVED_TYPES.contains(&name.as_str()) {
                        name.push_str("Value");
                    }
                    if let Some(other) = enums.insert(name.clone(), col.name.clone()) {
                        return Err(annotation_error(
                            schema_path,
                            line,
                            format!(
                                "the enums of {t}.{other} and {t}.{} would both be named `{name}`; rename one column",
                                col.name,
                                t = table.name
                            ),
                        ));
                    }
                    let mut seen = BTreeMap::new();
                    let mut pairs = Vec::new();
                    for v in values {
                        let mut p = pascal_case(v);
                        if p == "Self" {
                            p.push_str("Value");
                        }
                        if let Some(prev) = seen.insert(p.clone(), v.clone()) {
                            return Err(annotation_error(
                                schema_path,
                                line,
                                format!(
                                    "`@enum` values `{prev}` and `{v}` of {}.{} both become the Rust variant `{p}`; make them differ by more than case or separators",
                                    table.name, col.name
                                ),
                            ));
                        }
                        pairs.push((v.clone(), format_ident!("{}", p)));
                    }
                    Some((format_ident!("{}", name), pairs))
                }
                _ => None,
            };
            columns.push(TypedColumn {
                col,
                doc: cdoc.map_or("", |d| d.doc.as_str()),
                kind,
                field,
                param,
                variant,
                enumeration,
            });
        }
        let scoped = table.columns.contains_key("account_id");
        Ok(TypedTable {
            table,
            doc,
            columns,
            scoped,
        })
    }

    pub(crate) fn column(&self, name: &str) -> &TypedColumn<'a> {
        self.columns
            .iter()
            .find(|c| c.col.name == name)
            .expect("key columns are columns of the table")
    }

    /// The Rust type of a `Row` field, without `Option`.
    pub(crate) fn base_type(&self, c: &TypedColumn<'_>, rt: &syn::Path) -> TokenStream {
        if let Some((name, _)) = &c.enumeration {
            return quote!(#name);
        }
        match c.kind {
            Some(ColumnKind::Bool) => quote!(bool),
            Some(ColumnKind::Timestamp) => quote!(i64),
            Some(ColumnKind::Cbor(t)) => {
                let t = format_ident!("{}", t);
                quote!(#rt::Cbor<#rt::payload::#t>)
            }
            _ => match c.col.affinity() {
                Affinity::Integer => quote!(i64),
                Affinity::Text => quote!(String),
                Affinity::Blob => quote!(Vec<u8>),
                Affinity::Real | Affinity::Numeric => quote!(f64),
            },
        }
    }

    pub(crate) fn field_type(&self, c: &TypedColumn<'_>, rt: &syn::Path) -> TokenStream {
        let base = self.base_type(c, rt);
        if c.col.not_null {
            base
        } else {
            quote!(Option<#base>)
        }
    }

    /// The type of a key parameter: borrowed for TEXT, BLOB and CBOR, by value otherwise.
    pub(crate) fn key_type(&self, c: &TypedColumn<'_>, rt: &syn::Path) -> TokenStream {
        if let Some((name, _)) = &c.enumeration {
            return quote!(#name);
        }
        match c.kind {
            Some(ColumnKind::Bool) => quote!(bool),
            Some(ColumnKind::Timestamp) => quote!(i64),
            Some(ColumnKind::Cbor(t)) => {
                let t = format_ident!("{}", t);
                quote!(&#rt::Cbor<#rt::payload::#t>)
            }
            _ => match c.col.affinity() {
                Affinity::Integer => quote!(i64),
                Affinity::Text => quote!(&str),
                Affinity::Blob => quote!(&[u8]),
                Affinity::Real | Affinity::Numeric => quote!(f64),
            },
        }
    }
}

/// The Rust type of every column of `baseline` (without the `Option` of a nullable one) and
/// whether it is NOT NULL, keyed by (table, column). Runtime types are named through `runtime` and
/// generated enums through `schema` (the path of the generated module), so the query macros name
/// exactly the types the row structs use.
///
/// # Errors
/// [`Error::Annotation`] when a table's Rust names collide.
pub(crate) fn column_types(
    baseline: &Baseline,
    runtime: &syn::Path,
    schema: &syn::Path,
) -> Result<BTreeMap<(String, String), (TokenStream, bool)>> {
    let mut out = BTreeMap::new();
    for (name, table) in &baseline.fresh.tables {
        let typed = TypedTable::new(&baseline.annotations, &baseline.schema_path, table)?;
        let module = ident(&snake_case(name));
        for c in &typed.columns {
            let base = match &c.enumeration {
                Some((enum_name, _)) => quote!(#schema::#module::#enum_name),
                None => typed.base_type(c, runtime),
            };
            out.insert((name.clone(), c.col.name.clone()), (base, c.col.not_null));
        }
    }
    Ok(out)
}

fn annotation_error(schema_path: &Path, line: usize, message: String) -> Error {
    Error::Annotation {
        path: schema_path.to_path_buf(),
        line,
        message,
    }
}
