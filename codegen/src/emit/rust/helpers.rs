//! The query helpers of a table, derived from its keys and indexes: `get` by primary key and by
//! each unique key, `list_by_*` for each index prefix (and each proper prefix of a key),
//! `count_all`, `insert`, `update` and `delete`. Their SQL is rendered here, at build time.
//!
//! Invariant: every helper of a table with `account_id` takes the account first and filters by
//! it (`count_all`, for reports, is the one exception), and no two helpers share a name.

use super::table::TableGen;
use super::text::{code_span, doc_attrs, text_literal};
use super::WriteHelpers;
use crate::annotations::ColumnKind;
use crate::ident::{quote_ident, snake_case};
use crate::model::IndexColumn;
use crate::typing::TypedColumn;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use std::collections::BTreeSet;

#[derive(Clone, Copy)]
enum Shape {
    /// `execute`, returning `()`.
    Unit,
    /// `execute`, returning the number of rows changed.
    Count,
    /// At most one row.
    One,
    /// Every row.
    Many,
    /// One integer (a count).
    Scalar,
}

impl TableGen<'_> {
    /// Account id first (when the table is scoped), then `keys` without it.
    fn scoped_keys<'k>(&self, keys: &'k [String]) -> Vec<&'k str> {
        let mut out: Vec<&str> = Vec::new();
        if self.t.scoped {
            out.push("account_id");
        }
        out.extend(
            keys.iter()
                .map(String::as_str)
                .filter(|k| !(self.t.scoped && *k == "account_id")),
        );
        out
    }

    /// `"a" = ?n AND "b" = ?n+1 ...`, numbering from `first`.
    fn where_clause(keys: &[&str], first: usize) -> String {
        keys.iter()
            .enumerate()
            .map(|(i, k)| format!("{} = ?{}", quote_ident(k), first + i))
            .collect::<Vec<_>>()
            .join(" AND ")
    }

    fn select_sql(&self) -> String {
        let list = self
            .t
            .columns
            .iter()
            .map(|c| quote_ident(&c.col.name))
            .collect::<Vec<_>>()
            .join(", ");
        format!("SELECT {list} FROM {}", quote_ident(&self.t.table.name))
    }

    /// `what` for the docs: "`a` and `b`" (plus "within `account_id`").
    fn describe_keys(&self, keys: &[&str]) -> String {
        let own: Vec<String> = keys
            .iter()
            .filter(|k| !(self.t.scoped && **k == "account_id"))
            .map(|k| code_span(k))
            .collect();
        let mut s = match own.as_slice() {
            [] => "the given `account_id`".to_string(),
            [one] => format!("the given {one}"),
            [init @ .., last] => format!("the given {} and {last}", init.join(", ")),
        };
        if self.t.scoped && !own.is_empty() {
            s.push_str(" within the account `account_id`");
        }
        s
    }

    /// Every helper of the table, each name once.
    pub(super) fn helpers(&self) -> Vec<TokenStream> {
        let mut names = BTreeSet::new();
        let mut out = self.getters(&mut names);
        out.extend(self.lists(&mut names));
        out.push(self.count_all());
        out.extend(self.writes());
        out
    }

    /// `get` by primary key and `get_by_*` by each unique key.
    fn getters(&self, names: &mut BTreeSet<String>) -> Vec<TokenStream> {
        let mut out = Vec::new();
        let table = self.t.table;
        let select = self.select_sql();
        let pk = &table.primary_key;

        // get by primary key
        if !pk.is_empty() {
            let keys = self.scoped_keys(pk);
            let sql = format!("{select} WHERE {}", Self::where_clause(&keys, 1));
            let summary = format!(
                "Fetches the row with {} (the primary key).",
                self.describe_keys(&keys)
            );
            names.insert("get".to_string());
            out.push(self.helper("get", &summary, &keys, &sql, Shape::One, None));
        }

        // get_by_<cols> for each UNIQUE constraint, then each unique index
        let mut unique_sets: Vec<BTreeSet<String>> = Vec::new();
        let mut uniques: Vec<(Vec<String>, String)> = table
            .uniques
            .iter()
            .map(|u| {
                (
                    u.clone(),
                    format!("the `UNIQUE ({})` constraint", u.join(", ")),
                )
            })
            .collect();
        for index in table.indexes.values() {
            if !index.unique || index.partial.is_some() {
                continue;
            }
            let cols: Option<Vec<String>> = index.columns.iter().map(|c| c.name.clone()).collect();
            if let Some(cols) = cols {
                uniques.push((cols, format!("the unique index `{}`", index.name)));
            }
        }
        for (cols, source) in &uniques {
            let keys = self.scoped_keys(cols);
            let set: BTreeSet<String> = keys.iter().map(|k| k.to_string()).collect();
            if unique_sets.contains(&set) {
                continue;
            }
            let name = format!("get_by_{}", helper_suffix(&keys, self.t.scoped));
            if !names.insert(name.clone()) {
                continue;
            }
            unique_sets.push(set);
            let sql = format!("{select} WHERE {}", Self::where_clause(&keys, 1));
            let summary = format!(
                "Fetches the row with {} ({source}).",
                self.describe_keys(&keys)
            );
            out.push(self.helper(&name, &summary, &keys, &sql, Shape::One, None));
        }
        out
    }

    /// `list_by_*` for each useful prefix of each index and key.
    fn lists(&self, names: &mut BTreeSet<String>) -> Vec<TokenStream> {
        let mut out = Vec::new();
        let table = self.t.table;
        let select = self.select_sql();
        let pk = &table.primary_key;

        // list_by_<cols> for each prefix of each plain index, and each proper prefix of the primary
        // key, the unique keys and unique indexes (their full length is a `get`). A prefix never
        // ends on a timestamp: those columns order and range, and equality on them finds nothing
        // useful.
        let mut list_sets: Vec<BTreeSet<String>> = Vec::new();
        let key_columns = |cols: &[String]| -> Vec<IndexColumn> {
            cols.iter()
                .map(|c| IndexColumn {
                    name: Some(c.clone()),
                    desc: false,
                    collation: "BINARY".into(),
                })
                .collect()
        };
        let mut sources: Vec<(String, Vec<IndexColumn>, bool)> = Vec::new();
        for index in table.indexes.values() {
            if index.partial.is_none() {
                sources.push((
                    format!("index `{}`", index.name),
                    index.columns.clone(),
                    index.unique,
                ));
            }
        }
        sources.push(("the primary key".into(), key_columns(pk), true));
        for u in &table.uniques {
            sources.push((
                format!("unique key ({})", u.join(", ")),
                key_columns(u),
                true,
            ));
        }
        // A list whose equality covers a whole key returns one row at most: that is a `get`.
        let point_sets: Vec<BTreeSet<String>> = std::iter::once(pk)
            .chain(table.uniques.iter())
            .filter(|k| !k.is_empty())
            .map(|k| self.scoped_keys(k).iter().map(|c| c.to_string()).collect())
            .collect();
        for (label, columns, unique) in &sources {
            let named: Vec<_> = columns.iter().take_while(|c| c.name.is_some()).collect();
            let longest = if *unique {
                named.len().min(columns.len().saturating_sub(1))
            } else {
                named.len()
            };
            for n in 1..=longest {
                let prefix: Vec<String> =
                    named[..n].iter().filter_map(|c| c.name.clone()).collect();
                let last = prefix.last().map(String::as_str);
                if self.t.columns.iter().any(|c| {
                    Some(c.col.name.as_str()) == last && c.kind == Some(&ColumnKind::Timestamp)
                }) {
                    continue;
                }
                let keys = self.scoped_keys(&prefix);
                let set: BTreeSet<String> = keys.iter().map(|k| k.to_string()).collect();
                if list_sets.contains(&set) || point_sets.iter().any(|p| p.is_subset(&set)) {
                    continue;
                }
                let name = format!("list_by_{}", helper_suffix(&keys, self.t.scoped));
                if names.contains(&name) {
                    continue;
                }
                list_sets.push(set.clone());
                names.insert(name.clone());
                let mut order: Vec<String> = Vec::new();
                let mut ordered: BTreeSet<&str> = BTreeSet::new();
                for c in &named[n..] {
                    let col = c.name.as_deref().unwrap_or_default();
                    if set.contains(col) || !ordered.insert(col) {
                        continue;
                    }
                    let mut term = quote_ident(col);
                    if c.collation != "BINARY" {
                        term.push_str(" COLLATE ");
                        term.push_str(&c.collation);
                    }
                    term.push_str(if c.desc { " DESC" } else { " ASC" });
                    order.push(term);
                }
                for k in pk {
                    if !set.contains(k) && ordered.insert(k) {
                        order.push(format!("{} ASC", quote_ident(k)));
                    }
                }
                let mut sql = format!("{select} WHERE {}", Self::where_clause(&keys, 1));
                if !order.is_empty() {
                    sql.push_str(" ORDER BY ");
                    sql.push_str(&order.join(", "));
                }
                let summary = format!(
                    "Lists the rows with {}, in the order of {label}{}.",
                    self.describe_keys(&keys),
                    if pk.is_empty() {
                        ""
                    } else {
                        " then by primary key"
                    }
                );
                out.push(self.helper(&name, &summary, &keys, &sql, Shape::Many, None));
            }
        }
        out
    }

    /// `count_all`: the one unscoped helper, for reports such as `seed-agents-db open`.
    fn count_all(&self) -> TokenStream {
        let sql = format!("SELECT count(*) FROM {}", quote_ident(&self.t.table.name));
        let summary = "Counts the rows of the whole table, across every account (for reports).";
        self.helper("count_all", summary, &[], &sql, Shape::Scalar, None)
    }

    /// `insert`, and `update` and `delete` by primary key.
    fn writes(&self) -> Vec<TokenStream> {
        let mut out = Vec::new();
        let tname = quote_ident(&self.t.table.name);
        let pk = &self.t.table.primary_key;
        // insert
        let writable: Vec<&TypedColumn<'_>> = self
            .t
            .columns
            .iter()
            .filter(|c| c.col.hidden == 0)
            .collect();
        if !writable.is_empty() {
            let cols = writable
                .iter()
                .map(|c| quote_ident(&c.col.name))
                .collect::<Vec<_>>()
                .join(", ");
            let placeholders = (1..=writable.len())
                .map(|i| format!("?{i}"))
                .collect::<Vec<_>>()
                .join(", ");
            let sql = format!("INSERT INTO {tname} ({cols}) VALUES ({placeholders})");
            let args: Vec<TokenStream> = writable
                .iter()
                .map(|c| {
                    let f = &c.field;
                    quote!(row.#f)
                })
                .collect();
            out.push(self.helper(
                "insert",
                "Inserts `row`.",
                &[],
                &sql,
                Shape::Unit,
                Some(args),
            ));
        }

        // update and delete by primary key
        if !pk.is_empty() {
            let keys = self.scoped_keys(pk);
            let set: Vec<&TypedColumn<'_>> = writable
                .iter()
                .copied()
                .filter(|c| !keys.contains(&c.col.name.as_str()))
                .collect();
            if !set.is_empty() {
                let assignments = set
                    .iter()
                    .enumerate()
                    .map(|(i, c)| format!("{} = ?{}", quote_ident(&c.col.name), i + 1))
                    .collect::<Vec<_>>()
                    .join(", ");
                let sql = format!(
                    "UPDATE {tname} SET {assignments} WHERE {}",
                    Self::where_clause(&keys, set.len() + 1)
                );
                let args: Vec<TokenStream> = set
                    .iter()
                    .map(|c| c.field.clone())
                    .chain(keys.iter().map(|k| self.t.column(k).field.clone()))
                    .map(|f| quote!(row.#f))
                    .collect();
                let summary = format!(
                    "Updates every column of the row with `row`'s primary key{}, except the key{}; returns the number of rows changed (0 or 1).",
                    if self.t.scoped { " within `row.account_id`" } else { "" },
                    if self.t.scoped { " and `account_id`" } else { "" },
                );
                out.push(self.helper("update", &summary, &[], &sql, Shape::Count, Some(args)));
            }
            let sql = format!("DELETE FROM {tname} WHERE {}", Self::where_clause(&keys, 1));
            let summary = format!(
                "Deletes the row with {} (the primary key); returns the number of rows deleted (0 or 1).",
                self.describe_keys(&keys)
            );
            out.push(self.helper("delete", &summary, &keys, &sql, Shape::Count, None));
        }
        out
    }

    /// One helper function. `keys` become parameters (and the statement's arguments unless
    /// `args` is given, in which case the function takes `row: &Row`).
    fn helper(
        &self,
        name: &str,
        summary: &str,
        keys: &[&str],
        sql: &str,
        shape: Shape,
        args: Option<Vec<TokenStream>>,
    ) -> TokenStream {
        let rt = self.rt;
        let fn_name = format_ident!("{}", name);
        let vis = match (shape, self.writes) {
            (Shape::Unit | Shape::Count, WriteHelpers::Crate) => quote!(pub(crate)),
            _ => quote!(pub),
        };
        let errors = match shape {
            Shape::Unit | Shape::Count => {
                "Fails when SQLite fails, for example on a constraint violation."
            }
            Shape::Scalar => "Fails when SQLite fails.",
            Shape::One | Shape::Many => {
                "Fails when SQLite fails or a stored value does not decode (see [`Row::from_row`])."
            }
        };
        let doc = doc_attrs(&[
            summary.to_string(),
            String::new(),
            code_span(sql),
            String::new(),
            "# Errors".into(),
            errors.into(),
        ]);
        let (params, args) = match args {
            Some(args) => (vec![quote!(row: &Row)], args),
            None => {
                let cols: Vec<&TypedColumn<'_>> = keys.iter().map(|k| self.t.column(k)).collect();
                let params = cols
                    .iter()
                    .map(|c| {
                        let p = &c.param;
                        let t = self.t.key_type(c, self.rt);
                        quote!(#p: #t)
                    })
                    .collect();
                let args = cols
                    .iter()
                    .map(|c| {
                        let p = &c.param;
                        quote!(#p)
                    })
                    .collect();
                (params, args)
            }
        };
        let bind = quote! {
            let params: &[&dyn #rt::rusqlite::ToSql] = &[#(&#args),*];
        };
        let sql_lit = text_literal(sql);
        // The helper's SQL is this emitter's own, so a failed translation is an emitter bug: it
        // surfaces as a compile error in the generated module, naming the statement.
        let non_null = crate::postgres::non_null_columns([self.t.table]);
        let pg = match crate::postgres::translate(sql, args.len(), &non_null) {
            Ok(pg) => {
                let literal = text_literal(&pg);
                self.statements
                    .borrow_mut()
                    .push((name.to_owned(), sql.to_owned(), pg));
                literal
            }
            Err(e) => {
                let message =
                    format!("seed-agents-codegen: no PostgreSQL rendering of `{sql}`: {e}");
                return quote!(compile_error!(#message););
            }
        };
        // Every helper runs through the checked-query runtime, which owns the statement loop
        // of every backend.
        let (ret, body) = match shape {
            Shape::Unit => (
                quote!(()),
                quote! {
                    #bind
                    #rt::Query::new(SQL, PG_SQL, params, |_| Ok(())).execute(conn)?;
                    Ok(())
                },
            ),
            Shape::Scalar => (
                quote!(i64),
                quote! {
                    #bind
                    #rt::Query::new(SQL, PG_SQL, params, |row| #rt::FromColumn::from_column(row, 0, TABLE, ""))
                        .fetch_one(conn)
                },
            ),
            Shape::Count => (
                quote!(usize),
                quote! {
                    #bind
                    #rt::Query::new(SQL, PG_SQL, params, |_| Ok(())).execute(conn)
                },
            ),
            Shape::One => (
                quote!(Option<Row>),
                quote! {
                    #bind
                    #rt::Query::new(SQL, PG_SQL, params, Row::from_row).fetch_optional(conn)
                },
            ),
            Shape::Many => (
                quote!(Vec<Row>),
                quote! {
                    #bind
                    #rt::Query::new(SQL, PG_SQL, params, Row::from_row).fetch_all(conn)
                },
            ),
        };
        quote! {
            #doc
            #vis fn #fn_name(
                conn: &impl #rt::Executor,
                #(#params),*
            ) -> #rt::Result<#ret> {
                const SQL: &str = #sql_lit;
                const PG_SQL: &str = #pg;
                #body
            }
        }
    }
}

/// `a_and_b` for the key columns other than `account_id` (`account_id` when it is the only one).
fn helper_suffix(keys: &[&str], scoped: bool) -> String {
    let own: Vec<String> = keys
        .iter()
        .filter(|k| !(scoped && **k == "account_id"))
        .map(|k| snake_case(k))
        .collect();
    if own.is_empty() {
        "account_id".into()
    } else {
        own.join("_and_")
    }
}
