//! The items of one table's module: its enums, `Row` with its decoder, the sea-query `Column`
//! identifiers, and the module that holds them with the query helpers of [`super::helpers`].

use super::text::{code_span, doc_attrs, escape_doc, text_literal};
use super::WriteHelpers;
use crate::annotations::ColumnKind;
use crate::ident::{ident, is_plain_identifier, quote_ident, snake_case};
use crate::typing::{TypedColumn, TypedTable};
use proc_macro2::{Literal, TokenStream};
use quote::quote;

/// A typed table, the runtime path its items are rendered against, the visibility of its write
/// helpers and the cargo feature that gates its serde impls.
pub(super) struct TableGen<'a> {
    pub(super) rt: &'a syn::Path,
    pub(super) t: TypedTable<'a>,
    pub(super) writes: WriteHelpers,
    pub(super) serde: Option<&'a str>,
    /// Each helper's (name, SQLite text, PostgreSQL text), recorded as [`TableGen::helpers`]
    /// renders them, for the module's `STATEMENTS`.
    pub(super) statements: std::cell::RefCell<Vec<(String, String, String)>>,
}

impl TableGen<'_> {
    /// The `pub mod <table>` item.
    pub(super) fn module(&self) -> TokenStream {
        let name = &self.t.table.name;
        let module = ident(&snake_case(name));
        let table_doc = self.t.doc.map_or("", |d| d.doc.as_str());
        let mut mod_doc = Vec::new();
        if table_doc.is_empty() {
            mod_doc.push(format!("The `{name}` table."));
        } else {
            mod_doc.push(escape_doc(table_doc));
        }
        mod_doc.push(String::new());
        mod_doc.push(format!(
            "Typed rows, column identifiers and query helpers of the `{name}` table{}.",
            if self.t.scoped {
                "; every helper is scoped to one account (`account_id`)"
            } else {
                ""
            }
        ));
        let mod_doc = doc_attrs(&mod_doc);

        let column_names: Vec<&str> = self.t.columns.iter().map(|c| c.col.name.as_str()).collect();
        let column_list = text_literal(
            &column_names
                .iter()
                .map(|c| quote_ident(c))
                .collect::<Vec<_>>()
                .join(", "),
        );

        let enums = self.t.columns.iter().filter_map(|c| self.enumeration(c));
        let row = self.row_struct();
        let from_row = self.decoder();
        let iden = self.iden_enum();
        let helpers = self.helpers();
        let statements = self
            .statements
            .borrow()
            .iter()
            .map(|(name, sql, pg)| {
                let (sql, pg) = (text_literal(sql), text_literal(pg));
                quote!((#name, #sql, #pg))
            })
            .collect::<Vec<_>>();

        quote! {
            #mod_doc
            pub mod #module {
                /// The table's name.
                pub const TABLE: &str = #name;

                /// The table's columns in declaration order: the order `Row::from_row` reads them in.
                pub const COLUMNS: &[&str] = &[#(#column_names),*];

                /// [`COLUMNS`] as an SQL column list, each identifier double-quoted.
                pub const COLUMN_LIST: &str = #column_list;

                #(#enums)*

                #row

                #from_row

                #iden

                #(#helpers)*

                /// Every helper's statement: (helper, SQLite text, PostgreSQL text), for tools
                /// and tests that check them against a live database.
                pub const STATEMENTS: &[(&str, &str, &str)] = &[#(#statements),*];
            }
        }
    }

    /// The declaration line of a column's docs.
    fn declaration(&self, c: &TypedColumn<'_>) -> String {
        let mut s = format!("SQL: {}", code_span(&c.col.describe()));
        if c.col.pk > 0 {
            if self.t.table.primary_key.len() == 1 {
                s.push_str(", the primary key");
            } else {
                s.push_str(&format!(", primary-key column {}", c.col.pk));
            }
        }
        if let Some(kind) = c.kind {
            s.push_str(&format!(", annotated {}", code_span(&kind.describe())));
        }
        s.push('.');
        s
    }

    fn enumeration(&self, c: &TypedColumn<'_>) -> Option<TokenStream> {
        let rt = self.rt;
        let (name, pairs) = c.enumeration.as_ref()?;
        let mut doc = vec![format!(
            "The values of `{}.{}` ({}).",
            self.t.table.name,
            c.col.name,
            code_span(&c.kind.map(ColumnKind::describe).unwrap_or_default())
        )];
        if !c.doc.is_empty() {
            doc.push(String::new());
            doc.push(escape_doc(c.doc));
        }
        doc.extend(self.enum_serde_doc());
        let doc = doc_attrs(&doc);
        let variants = pairs.iter().map(|(value, variant)| {
            let doc = doc_attrs(&[format!("Stored as {}.", code_span(value))]);
            quote! { #doc #variant }
        });
        let all = pairs.iter().map(|(_, v)| quote!(Self::#v));
        let as_str = pairs.iter().map(|(value, v)| quote!(Self::#v => #value));
        let parse = pairs
            .iter()
            .map(|(value, v)| quote!(#value => Some(Self::#v)));
        let column = &c.col.name;
        let expected = format!(
            "must be one of: {}",
            pairs
                .iter()
                .map(|(value, _)| value.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let values: Vec<&str> = pairs.iter().map(|(value, _)| value.as_str()).collect();
        let serde_impls = self.enum_serde_impls(name, &values);
        Some(quote! {
            #doc
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
            pub enum #name {
                #(#variants,)*
            }

            impl #name {
                /// Every value, in declaration order.
                pub const ALL: &'static [Self] = &[#(#all),*];

                /// The text stored in the column.
                pub fn as_str(self) -> &'static str {
                    match self {
                        #(#as_str,)*
                    }
                }

                /// The value stored as `s`, or `None` when `s` is outside the set.
                pub fn parse(s: &str) -> Option<Self> {
                    match s {
                        #(#parse,)*
                        _ => None,
                    }
                }
            }

            impl ::core::fmt::Display for #name {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    f.write_str(self.as_str())
                }
            }

            /// Parses the stored text, e.g. a value a client sent; anything outside the set is
            /// `Error::Invalid` naming the column and the values it takes.
            impl ::core::str::FromStr for #name {
                type Err = #rt::Error;

                fn from_str(s: &str) -> #rt::Result<Self> {
                    Self::parse(s).ok_or_else(|| #rt::Error::Invalid {
                        field: #column,
                        reason: ::std::format!("{:?} {}", s, #expected),
                    })
                }
            }

            impl ::core::convert::From<#name> for #rt::sea_query::Value {
                fn from(value: #name) -> Self {
                    value.as_str().into()
                }
            }

            impl #rt::rusqlite::ToSql for #name {
                fn to_sql(&self) -> #rt::rusqlite::Result<#rt::rusqlite::types::ToSqlOutput<'_>> {
                    Ok(#rt::rusqlite::types::ToSqlOutput::from(self.as_str()))
                }
            }

            impl #rt::FromColumn for #name {
                fn from_column(
                    row: &dyn #rt::Columns,
                    idx: usize,
                    table: &'static str,
                    column: &'static str,
                ) -> #rt::Result<Self> {
                    #rt::enum_from_column(row, idx, table, column, Self::parse)
                }
            }

            impl #rt::BindsTo<#name> for #name {}
            impl #rt::BindsTo<Option<#name>> for #name {}
            // Bound as its text, so `CAST(? AS TEXT)` takes it too.
            impl #rt::CastsTo<String> for #name {}

            #serde_impls
        })
    }

    fn row_struct(&self) -> TokenStream {
        let name = &self.t.table.name;
        let fields = self.t.columns.iter().map(|c| {
            let mut doc = Vec::new();
            if !c.doc.is_empty() {
                doc.push(escape_doc(c.doc));
                doc.push(String::new());
            }
            doc.push(self.declaration(c));
            let doc = doc_attrs(&doc);
            let field = &c.field;
            let ty = self.t.field_type(c, self.rt);
            let serde = self.field_serde_attrs(c);
            quote! { #doc #serde pub #field: #ty }
        });
        let mut doc = vec![format!(
            "One row of `{name}`, with one field per column in declaration order."
        )];
        doc.extend(self.row_serde_doc());
        let doc = doc_attrs(&doc);
        let serde = self.row_serde_attrs();
        quote! {
            #doc
            #[derive(Debug, Clone, PartialEq)]
            #serde
            pub struct Row {
                #(#fields,)*
            }
        }
    }

    fn decoder(&self) -> TokenStream {
        let rt = self.rt;
        let fields = self.t.columns.iter().enumerate().map(|(i, c)| {
            let i = Literal::usize_unsuffixed(i);
            let field = &c.field;
            let column = &c.col.name;
            let value = quote!(#rt::FromColumn::from_column(row, #i, TABLE, #column)?);
            quote! { #field: #value }
        });
        quote! {
            impl Row {
                /// Decodes a row selected with [`COLUMN_LIST`], reading the columns by index in
                /// [`COLUMNS`] order.
                ///
                /// # Errors
                /// Fails when SQLite fails or a value does not fit its field: a text outside an
                /// enum's set, a bool other than 0 or 1, or a value of the wrong storage class.
                pub fn from_row(row: &dyn #rt::Columns) -> #rt::Result<Self> {
                    Ok(Self {
                        #(#fields,)*
                    })
                }
            }

            impl #rt::FromRow for Row {
                fn from_row(row: &dyn #rt::Columns) -> #rt::Result<Self> {
                    Row::from_row(row)
                }
            }
        }
    }

    fn iden_enum(&self) -> TokenStream {
        let rt = self.rt;
        let name = &self.t.table.name;
        let variants = self.t.columns.iter().map(|c| {
            let v = &c.variant;
            let doc = doc_attrs(&[format!("The column {}.", code_span(&c.col.name))]);
            quote! { #doc #v }
        });
        let all = self.t.columns.iter().map(|c| {
            let v = &c.variant;
            quote!(Self::#v)
        });
        let names = self.t.columns.iter().map(|c| {
            let v = &c.variant;
            let n = &c.col.name;
            quote!(Self::#v => #n)
        });
        // sea-query escapes `Cow::Owned` identifiers and trusts `Cow::Borrowed` ones.
        let plain = std::iter::once(name)
            .chain(self.t.columns.iter().map(|c| &c.col.name))
            .all(|n| is_plain_identifier(n));
        let quoted = plain.then(|| {
            quote! {
                fn quoted(&self) -> ::std::borrow::Cow<'static, str> {
                    ::std::borrow::Cow::Borrowed(self.name())
                }
            }
        });
        let doc = doc_attrs(&[
            format!(
                "The identifiers of `{name}` for building sea-query statements: `Column::Table` is"
            ),
            "the table, every other variant one column.".into(),
        ]);
        quote! {
            #doc
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
            pub enum Column {
                /// The table itself.
                Table,
                #(#variants,)*
            }

            impl Column {
                /// Every column (not [`Column::Table`]), in declaration order: for a statement
                /// that selects them all, in the order `Row::from_row` reads.
                pub const ALL: &'static [Self] = &[#(#all),*];

                /// The table's or the column's name, unquoted.
                pub fn name(self) -> &'static str {
                    match self {
                        Self::Table => TABLE,
                        #(#names,)*
                    }
                }
            }

            impl #rt::sea_query::Iden for Column {
                #quoted

                fn unquoted(&self) -> &str {
                    self.name()
                }
            }
        }
    }
}
