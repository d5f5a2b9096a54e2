//! Compile-time checking of SQL against schema.sql: the expansions of `query!`, `query_as!` and
//! `derive(Row)`. The proc-macro crate only parses its input and calls in here.
//!
//! Each statement is prepared on an in-memory database built from schema.sql, so SQLite itself
//! reports unknown tables, unknown columns and syntax errors. Result columns that come straight
//! from a table column take that column's generated type; arguments are checked against the column
//! they bind to where the statement shows it (`col = ?`, `? = col`, `col IN (?, ..)`,
//! `INSERT INTO t (cols) VALUES (?, ..)`).

use crate::emit::rust::column_type;
use crate::model::Affinity;
use crate::project::execute_file;
use crate::sql::{self, Token, TokenKind};
use crate::{Baseline, Result};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use rusqlite::Connection;
use std::collections::BTreeMap;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, LitStr, Token, Type};

/// One result column of a described statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultColumn {
    /// The column's name in the result (its alias, or SQLite's name for it).
    pub name: String,
    /// The table column it comes straight from, if any.
    pub origin: Option<(String, String)>,
    /// The affinity of a top-level `CAST(.. AS type)`, for an expression column.
    pub cast: Option<Affinity>,
}

/// What SQLite says about a statement, plus what the text shows about its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Described {
    /// Number of parameters (the largest `?N`).
    pub params: usize,
    /// The result columns, in order.
    pub columns: Vec<ResultColumn>,
    /// 1-based parameter index -> the (table, column) it binds to, where the text shows it.
    pub bindings: BTreeMap<usize, (String, String)>,
    /// The statement has an outer join, so any table column may come back NULL.
    pub outer_join: bool,
    /// Parameters the statement tests for NULL (`?2 IS NULL OR col = ?2`): they may be `None`.
    pub nullable: std::collections::BTreeSet<usize>,
}

/// Checks statements against schema.sql and expands the query macros.
pub struct Checker {
    conn: Connection,
    baseline: Baseline,
    /// (table, column) -> (the column's Rust type as source text, NOT NULL), computed once.
    types: BTreeMap<(String, String), (String, bool)>,
    // Kept as text and parsed per expansion: tokens must not outlive the macro call that made
    // them, and the checker outlives every call.
    runtime: String,
}

impl std::fmt::Debug for Checker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checker")
            .field("schema_path", &self.baseline.schema_path)
            .finish()
    }
}

impl Checker {
    /// A checker over `baseline`, whose expansions name runtime items through `runtime` (e.g.
    /// `::seed_agents_store::__private`) and generated items through `schema` (e.g.
    /// `::seed_agents_store::schema`).
    ///
    /// # Errors
    /// SQL of the baseline that SQLite rejects, or a path that does not parse.
    pub fn new(baseline: Baseline, runtime: &str, schema: &str) -> Result<Checker> {
        for p in [runtime, schema] {
            syn::parse_str::<syn::Path>(p).map_err(|e| crate::Error::Emit {
                message: format!("`{p}` is not a Rust path: {e}"),
            })?;
        }
        let conn = Connection::open_in_memory().map_err(|source| crate::Error::Introspect {
            what: "an in-memory database".into(),
            source,
        })?;
        execute_file(&conn, &baseline.schema_path, &baseline.schema_sql)?;
        let rt: syn::Path = syn::parse_str(runtime).expect("checked above");
        let schema_path: syn::Path = syn::parse_str(schema).expect("checked above");
        let mut types = BTreeMap::new();
        for (tname, table) in &baseline.fresh.tables {
            for cname in table.columns.keys() {
                if let Some((ty, not_null)) =
                    column_type(&baseline, tname, cname, &rt, &schema_path)?
                {
                    types.insert((tname.clone(), cname.clone()), (ty.to_string(), not_null));
                }
            }
        }
        Ok(Checker {
            conn,
            types,
            runtime: runtime.to_string(),
            baseline,
        })
    }

    /// Prepares `sql` against the schema and describes it; `Err` carries SQLite's message.
    pub fn describe(&self, sql_text: &str) -> Result<Described, String> {
        let stmt = self.conn.prepare(sql_text).map_err(|e| match e {
            rusqlite::Error::SqliteFailure(_, Some(m)) => m,
            other => other.to_string(),
        })?;
        let tokens = merge_parameters(
            sql_text,
            sql::tokenize(sql_text)
                .map_err(|e| format!("unterminated {} on line {}", e.what, e.line))?
                .into_iter()
                .filter(|t| t.kind != TokenKind::Comment)
                .collect(),
        );
        let casts = result_casts(&tokens);
        let columns: Vec<ResultColumn> = stmt
            .columns_with_metadata()
            .enumerate()
            .map(|(i, m)| ResultColumn {
                name: m.name().to_string(),
                origin: match (m.table_name(), m.origin_name()) {
                    (Some(t), Some(c)) => Some((t.to_string(), c.to_string())),
                    _ => None,
                },
                cast: casts
                    .as_ref()
                    .filter(|c| c.len() == stmt.column_count())
                    .and_then(|c| c[i]),
            })
            .collect();
        let mut param_index = |t: &Token<'_>| -> Option<usize> {
            let text = t.text;
            if let Some(n) = text.strip_prefix('?') {
                if !n.is_empty() {
                    return n.parse().ok();
                }
            }
            stmt.parameter_index(text).ok().flatten()
        };
        let nullable = tokens
            .windows(2)
            .filter(|w| w[1].is_word("IS") && group_params(&w[..1])[0])
            .filter_map(|w| param_index(&w[0]))
            .collect();
        let bindings = self.bindings(&tokens, &mut param_index);
        let outer_join = tokens
            .iter()
            .any(|t| t.is_word("LEFT") || t.is_word("RIGHT") || t.is_word("FULL"));
        Ok(Described {
            params: stmt.parameter_count(),
            columns,
            bindings,
            outer_join,
            nullable,
        })
    }

    /// Which parameters bind to which table columns, as far as the text shows.
    fn bindings(
        &self,
        tokens: &[Token<'_>],
        param_index: &mut dyn FnMut(&Token<'_>) -> Option<usize>,
    ) -> BTreeMap<usize, (String, String)> {
        let params = group_params(tokens);
        let mut sequential = 0usize;
        let mut indexes = Vec::with_capacity(tokens.len());
        for (i, t) in tokens.iter().enumerate() {
            indexes.push(if params[i] {
                if t.text == "?" {
                    sequential += 1;
                    Some(sequential)
                } else {
                    let n = param_index(t);
                    if let Some(n) = n {
                        sequential = sequential.max(n);
                    }
                    n
                }
            } else {
                None
            });
        }
        let tables = self.statement_tables(tokens);
        let resolve = |qualifier: Option<&str>, column: &str| -> Option<(String, String)> {
            let candidates: Vec<&String> = match qualifier {
                Some(q) => tables
                    .iter()
                    .filter(|(alias, _)| alias.eq_ignore_ascii_case(q))
                    .map(|(_, t)| t)
                    .collect(),
                None => tables.iter().map(|(_, t)| t).collect(),
            };
            let mut found: Vec<(String, String)> = candidates
                .into_iter()
                .filter_map(|t| {
                    let table = self.baseline.fresh.tables.get(t)?;
                    let c = table
                        .columns
                        .keys()
                        .find(|c| c.eq_ignore_ascii_case(column))?;
                    Some((t.clone(), c.clone()))
                })
                .collect();
            found.dedup();
            (found.len() == 1).then(|| found.remove(0))
        };
        let mut out = BTreeMap::new();
        let column_before = |i: usize| -> Option<(Option<String>, String)> {
            let c = tokens.get(i.checked_sub(1)?)?;
            if !matches!(c.kind, TokenKind::Word | TokenKind::QuotedIdent) {
                return None;
            }
            let dot = i.checked_sub(2).and_then(|j| tokens.get(j));
            if dot.is_some_and(|d| d.text == ".") {
                let q = tokens.get(i.checked_sub(3)?)?;
                return Some((Some(q.ident()), c.ident()));
            }
            Some((None, c.ident()))
        };
        const OPS: &[&str] = &["=", "==", "!=", "<>", "<", "<=", ">", ">="];
        for (i, idx) in indexes.iter().enumerate() {
            let Some(idx) = *idx else { continue };
            // `col op ?`: the operator may be two tokens (`<=`, `!=`, `==`).
            let mut j = i;
            let mut op = String::new();
            while j > 0 && tokens[j - 1].kind == TokenKind::Punct && op.len() < 2 {
                op.insert_str(0, tokens[j - 1].text);
                j -= 1;
                if OPS.contains(&op.as_str()) {
                    break;
                }
            }
            let word_op = j > 0
                && ["IS", "LIKE", "GLOB"]
                    .iter()
                    .any(|w| tokens[j - 1].is_word(w))
                && {
                    j -= 1;
                    true
                };
            if OPS.contains(&op.as_str()) || word_op {
                if let Some((q, c)) = column_before(j) {
                    if let Some(b) = resolve(q.as_deref(), &c) {
                        out.insert(idx, b);
                        continue;
                    }
                }
            }
            // `? op col`
            if let (Some(o), Some(c)) = (tokens.get(i + 1), tokens.get(i + 2)) {
                if OPS.contains(&o.text)
                    && matches!(c.kind, TokenKind::Word | TokenKind::QuotedIdent)
                {
                    let qualified = tokens.get(i + 3).is_some_and(|d| d.text == ".");
                    let b = if qualified {
                        tokens
                            .get(i + 4)
                            .and_then(|col| resolve(Some(&c.ident()), &col.ident()))
                    } else {
                        resolve(None, &c.ident())
                    };
                    if let Some(b) = b {
                        out.insert(idx, b);
                        continue;
                    }
                }
            }
            // `col IN (?, ?, ...)`
            let mut k = i;
            while k > 0 && (tokens[k - 1].text == "," || indexes[k - 1].is_some()) {
                k -= 1;
            }
            if k >= 2 && tokens[k - 1].text == "(" && tokens[k - 2].is_word("IN") {
                if let Some((q, c)) = column_before(k - 2) {
                    if let Some(b) = resolve(q.as_deref(), &c) {
                        out.insert(idx, b);
                    }
                }
            }
        }
        // INSERT INTO t (c1, c2, ...) VALUES (p1, p2, ...)
        if let Some(into) = tokens.iter().position(|t| t.is_word("INTO")) {
            let table = tokens.get(into + 1).map(Token::ident);
            let open = into + 2;
            if let (Some(table), Some(true)) = (table, tokens.get(open).map(|t| t.text == "(")) {
                let mut cols = Vec::new();
                let mut p = open + 1;
                while p < tokens.len() && tokens[p].text != ")" {
                    if tokens[p].text != "," {
                        cols.push(tokens[p].ident());
                    }
                    p += 1;
                }
                if tokens.get(p + 1).is_some_and(|t| t.is_word("VALUES"))
                    && tokens.get(p + 2).is_some_and(|t| t.text == "(")
                {
                    let mut position = 0;
                    let mut q = p + 3;
                    let mut depth = 0;
                    let mut element_start = true;
                    while q < tokens.len() {
                        match tokens[q].text {
                            "(" => depth += 1,
                            ")" if depth == 0 => break,
                            ")" => depth -= 1,
                            "," if depth == 0 => {
                                position += 1;
                                element_start = true;
                                q += 1;
                                continue;
                            }
                            _ => {}
                        }
                        let whole_element = element_start
                            && tokens
                                .get(q + 1)
                                .is_some_and(|n| n.text == "," || n.text == ")");
                        if let (true, Some(idx), Some(col)) =
                            (whole_element, indexes[q], cols.get(position))
                        {
                            if let Some(b) = resolve_in(&self.baseline, &table, col) {
                                out.entry(idx).or_insert(b);
                            }
                        }
                        element_start = false;
                        q += 1;
                    }
                }
            }
        }
        out
    }

    /// (alias or name, table) of every table the statement names after FROM, JOIN, UPDATE or INTO.
    fn statement_tables(&self, tokens: &[Token<'_>]) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (i, t) in tokens.iter().enumerate() {
            let starts =
                t.is_word("FROM") || t.is_word("JOIN") || t.is_word("UPDATE") || t.is_word("INTO");
            let mut j = i + 1;
            while starts && j < tokens.len() {
                let Some(name) = tokens.get(j) else { break };
                if !matches!(name.kind, TokenKind::Word | TokenKind::QuotedIdent) {
                    break;
                }
                let table = name.ident();
                if !self.baseline.fresh.tables.contains_key(&table) {
                    break;
                }
                out.push((table.clone(), table.clone()));
                let mut k = j + 1;
                if tokens.get(k).is_some_and(|a| a.is_word("AS")) {
                    k += 1;
                }
                if let Some(alias) = tokens.get(k) {
                    let keyword = [
                        "WHERE",
                        "JOIN",
                        "LEFT",
                        "INNER",
                        "CROSS",
                        "ON",
                        "SET",
                        "ORDER",
                        "GROUP",
                        "LIMIT",
                        "INDEXED",
                        "NOT",
                        "USING",
                        "VALUES",
                        "DEFAULT",
                        "SELECT",
                        "RETURNING",
                        "NATURAL",
                        "RIGHT",
                        "FULL",
                        "OUTER",
                        "UNION",
                        "HAVING",
                        "WINDOW",
                    ]
                    .iter()
                    .any(|k| alias.is_word(k));
                    if matches!(alias.kind, TokenKind::Word | TokenKind::QuotedIdent) && !keyword {
                        out.push((alias.ident(), table.clone()));
                        k += 1;
                    }
                }
                // `FROM a, b`
                if tokens.get(k).is_some_and(|c| c.text == ",") && t.is_word("FROM") {
                    j = k + 1;
                } else {
                    break;
                }
            }
        }
        out
    }

    /// The runtime path, as tokens of the current expansion.
    fn rt(&self) -> syn::Path {
        syn::parse_str(&self.runtime).expect("checked in Checker::new")
    }

    fn column_type(&self, table: &str, column: &str) -> syn::Result<Option<(TokenStream, bool)>> {
        let Some((ty, not_null)) = self.types.get(&(table.to_string(), column.to_string())) else {
            return Ok(None);
        };
        let ty: TokenStream = ty
            .parse()
            .map_err(|e| syn::Error::new(Span::call_site(), format!("{e}")))?;
        Ok(Some((ty, *not_null)))
    }

    /// The Rust type of a result column: the table column's generated type, `Option` around it
    /// under an outer join; for an expression, `Option` of its cast type or of a dynamic value.
    fn result_type(&self, d: &Described, c: &ResultColumn) -> syn::Result<(TokenStream, bool)> {
        let rt = &self.rt();
        if let Some((t, col)) = &c.origin {
            if let Some((ty, not_null)) = self.column_type(t, col)? {
                if d.outer_join && not_null {
                    return Ok((quote!(Option<#ty>), false));
                }
                return Ok((ty, not_null));
            }
        }
        let ty = match c.cast {
            Some(Affinity::Integer) => quote!(i64),
            Some(Affinity::Text) => quote!(String),
            Some(Affinity::Blob) => quote!(Vec<u8>),
            Some(Affinity::Real | Affinity::Numeric) => quote!(f64),
            None => quote!(#rt::rusqlite::types::Value),
        };
        Ok((quote!(Option<#ty>), false))
    }

    fn describe_spanned(&self, lit: &LitStr) -> syn::Result<Described> {
        self.describe(&lit.value())
            .map_err(|m| syn::Error::new(lit.span(), format!("SQLite rejects this statement: {m}")))
    }

    /// Argument checks and the parameter list shared by `query!` and `query_as!`.
    fn arguments(
        &self,
        lit: &LitStr,
        d: &Described,
        args: &[Expr],
    ) -> syn::Result<(TokenStream, TokenStream)> {
        let rt = &self.rt();
        if args.len() != d.params {
            let (span, what) = if args.len() > d.params {
                (args[d.params].span(), "too many arguments")
            } else {
                (lit.span(), "too few arguments")
            };
            return Err(syn::Error::new(
                span,
                format!(
                    "{what}: the statement has {} parameter{} and {} argument{} {} given",
                    d.params,
                    if d.params == 1 { "" } else { "s" },
                    args.len(),
                    if args.len() == 1 { "" } else { "s" },
                    if args.len() == 1 { "was" } else { "were" },
                ),
            ));
        }
        let mut checks = Vec::new();
        for (i, arg) in args.iter().enumerate() {
            if let Some((t, c)) = d.bindings.get(&(i + 1)) {
                if let Some((ty, not_null)) = self.column_type(t, c)? {
                    let ty = if not_null && d.nullable.contains(&(i + 1)) {
                        quote!(Option<#ty>)
                    } else {
                        ty
                    };
                    checks.push(quote_spanned!(arg.span()=> #rt::bind_check::<#ty, _>(&(#arg));));
                }
            }
        }
        let params = args
            .iter()
            .map(|a| quote_spanned!(a.span()=> &(#a) as &dyn #rt::rusqlite::ToSql));
        Ok((quote!(#(#checks)*), quote!(&[#(#params),*])))
    }

    /// `query!("SQL", args...)`: a [`Query`] whose rows are an anonymous record typed from the
    /// schema.
    ///
    /// # Errors
    /// A `syn::Error` spanned on the literal or argument at fault.
    pub fn query(&self, input: TokenStream) -> syn::Result<TokenStream> {
        let QueryInput { lit, args } = syn::parse2(input)?;
        let d = self.describe_spanned(&lit)?;
        let rt = &self.rt();
        let (checks, params) = self.arguments(&lit, &d, &args)?;
        let mut fields = Vec::new();
        let mut names = Vec::new();
        let mut types = Vec::new();
        let mut origins = Vec::new();
        let mut seen = BTreeMap::new();
        for c in &d.columns {
            let field = field_ident(&c.name).ok_or_else(|| {
                syn::Error::new(
                    lit.span(),
                    format!(
                        "result column `{}` is not a Rust field name; name it with `AS name`",
                        c.name
                    ),
                )
            })?;
            if let Some(prev) = seen.insert(field.to_string(), c.name.clone()) {
                return Err(syn::Error::new(
                    lit.span(),
                    format!("result columns `{prev}` and `{}` would both be the field `{field}`; rename one with `AS`", c.name),
                ));
            }
            let (ty, _) = self.result_type(&d, c)?;
            let (table, column) = c.origin.clone().unwrap_or_default();
            fields.push(quote!(pub #field: #ty));
            names.push(field);
            types.push(ty);
            origins.push(quote!((#table, #column)));
        }
        // Up to 12 columns decode through one shared tuple decoder; wider rows field by field.
        let decode = if names.len() <= 12 {
            quote! {
                let (#(#names,)*): (#(#types,)*) =
                    #rt::FromColumns::from_columns(row, &[#(#origins),*])?;
                Ok(Record { #(#names),* })
            }
        } else {
            let each = names.iter().zip(&origins).enumerate().map(|(i, (n, o))| {
                quote!(#n: { let (t, c) = #o; #rt::FromColumn::from_column(row, #i, t, c)? })
            });
            quote!(Ok(Record { #(#each,)* }))
        };
        let sql = lit.value();
        if fields.is_empty() {
            // No result columns: rows are `()`, so statements like these share one type.
            return Ok(quote! {{
                #checks
                fn __decode(_: &#rt::rusqlite::Row<'_>) -> #rt::Result<()> {
                    Ok(())
                }
                #rt::Query::new(#sql, #params, __decode as fn(&#rt::rusqlite::Row<'_>) -> #rt::Result<()>)
            }});
        }
        Ok(quote! {{
            #checks
            /// A row of a checked query. It derives nothing: a derive per query is most of what
            /// checked SQL would cost the compiler (use `query_as!` with your own type for that).
            #[allow(non_camel_case_types)]
            struct Record { #(#fields,)* }
            fn __decode(row: &#rt::rusqlite::Row<'_>) -> #rt::Result<Record> {
                #decode
            }
            #rt::Query::new(#sql, #params, __decode)
        }})
    }

    /// `query_as!(Type, "SQL", args...)`: fills `Type`, one field per result column.
    ///
    /// # Errors
    /// A `syn::Error` spanned on the literal or argument at fault; rustc reports a missing or
    /// extra field, and the field checks report a type that cannot hold its column.
    pub fn query_as(&self, input: TokenStream) -> syn::Result<TokenStream> {
        let QueryAsInput { ty, lit, args } = syn::parse2(input)?;
        let d = self.describe_spanned(&lit)?;
        let rt = &self.rt();
        let (checks, params) = self.arguments(&lit, &d, &args)?;
        let mut fields = Vec::new();
        let mut field_checks = Vec::new();
        for (i, c) in d.columns.iter().enumerate() {
            let field = field_ident(&c.name).ok_or_else(|| {
                syn::Error::new(
                    lit.span(),
                    format!(
                        "result column `{}` is not a Rust field name; name it with `AS name`",
                        c.name
                    ),
                )
            })?;
            let (col_ty, _) = self.result_type(&d, c)?;
            let (table, column) = c.origin.clone().unwrap_or_default();
            let marker = format_ident!("{}", field.to_string().trim_start_matches("r#"));
            field_checks.push(quote_spanned! {lit.span()=>
                {
                    #[allow(non_camel_case_types, dead_code)]
                    struct #marker;
                    #rt::field_check_by::<#col_ty, #ty, _, _>(|r: &#ty| &r.#field, #marker);
                }
            });
            let value = quote_spanned!(lit.span()=> #rt::FromColumn::from_column(row, #i, #table, #column)?);
            fields.push(quote_spanned!(lit.span()=> #field: #value));
        }
        let sql = lit.value();
        Ok(quote! {{
            #checks
            #(#field_checks)*
            fn __decode(row: &#rt::rusqlite::Row<'_>) -> #rt::Result<#ty> {
                Ok(#ty { #(#fields,)* })
            }
            #rt::Query::new(#sql, #params, __decode)
        }})
    }

    /// `#[derive(Row)]` with `#[row(table = "runs")]`: a partial projection of one table.
    ///
    /// # Errors
    /// A `syn::Error` on the attribute or on a field that names no column of the table.
    pub fn derive_row(&self, input: TokenStream) -> syn::Result<TokenStream> {
        let input: syn::DeriveInput = syn::parse2(input)?;
        let rt = &self.rt();
        let mut table: Option<LitStr> = None;
        for attr in input.attrs.iter().filter(|a| a.path().is_ident("row")) {
            attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("table") {
                    table = Some(meta.value()?.parse()?);
                    Ok(())
                } else {
                    Err(meta.error("expected `table = \"name\"`"))
                }
            })?;
        }
        let Some(table) = table else {
            return Err(syn::Error::new_spanned(
                &input.ident,
                "derive(Row) needs `#[row(table = \"<table>\")]` naming the table the fields come from",
            ));
        };
        let tname = table.value();
        let Some(model) = self.baseline.fresh.tables.get(&tname) else {
            return Err(syn::Error::new(
                table.span(),
                format!("schema.sql has no table `{tname}`"),
            ));
        };
        let syn::Data::Struct(syn::DataStruct {
            fields: syn::Fields::Named(named),
            ..
        }) = &input.data
        else {
            return Err(syn::Error::new_spanned(
                &input.ident,
                "derive(Row) works on structs with named fields",
            ));
        };
        let mut errors: Option<syn::Error> = None;
        let mut push_err = |e: syn::Error| match &mut errors {
            Some(all) => all.combine(e),
            None => errors = Some(e),
        };
        let mut columns = Vec::new();
        let mut checks = Vec::new();
        let mut decode = Vec::new();
        for (i, f) in named.named.iter().enumerate() {
            let ident = f.ident.as_ref().expect("named fields have names");
            let name = ident.to_string().trim_start_matches("r#").to_string();
            let Some(col) = model.columns.keys().find(|c| **c == name) else {
                push_err(syn::Error::new_spanned(
                    ident,
                    format!(
                        "table `{tname}` has no column `{name}`; its columns are: {}",
                        model
                            .ordered_columns()
                            .map(|c| c.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
                continue;
            };
            let Some((col_ty, _)) = self.column_type(&tname, col)? else {
                continue;
            };
            let fty = &f.ty;
            checks.push(quote_spanned!(fty.span()=> #rt::field_check::<#col_ty, #fty>();));
            columns.push(format!("\"{}\"", col.replace('"', "\"\"")));
            decode.push(quote!(#ident: #rt::FromColumn::from_column(row, #i, #tname, #col)?));
        }
        if let Some(e) = errors {
            return Err(e);
        }
        let name = &input.ident;
        let (impl_g, ty_g, where_g) = input.generics.split_for_impl();
        let list = columns.join(", ");
        Ok(quote! {
            const _: () = {
                fn __checks() { #(#checks)* }
            };
            impl #impl_g #name #ty_g #where_g {
                /// The table these fields come from.
                pub const TABLE: &'static str = #tname;
                /// The selected columns, in field order, each double-quoted.
                pub const COLUMN_LIST: &'static str = #list;
                /// Decodes a row selected with [`Self::COLUMN_LIST`].
                ///
                /// # Errors
                /// As the generated rows' `from_row`.
                pub fn from_row(row: &#rt::rusqlite::Row<'_>) -> #rt::Result<Self> {
                    Ok(Self { #(#decode,)* })
                }
            }
        })
    }
}

fn resolve_in(baseline: &Baseline, table: &str, column: &str) -> Option<(String, String)> {
    let t = baseline.fresh.tables.get(table)?;
    let c = t.columns.keys().find(|c| c.eq_ignore_ascii_case(column))?;
    Some((table.to_string(), c.clone()))
}

/// Joins each parameter into one token: `?` with an adjacent number (`?3`), and `:`, `@` or `$`
/// with an adjacent name (`:id`), so a parameter is always a single token.
fn merge_parameters<'a>(src: &'a str, tokens: Vec<Token<'a>>) -> Vec<Token<'a>> {
    let mut out: Vec<Token<'a>> = Vec::with_capacity(tokens.len());
    for t in tokens {
        if let Some(prev) = out.last_mut() {
            let adjacent = prev.offset + prev.text.len() == t.offset;
            let joins = matches!(
                (prev.text, t.kind),
                ("?", TokenKind::Number) | (":" | "@" | "$", TokenKind::Word)
            );
            if adjacent && joins && prev.kind == TokenKind::Punct {
                prev.text = &src[prev.offset..t.offset + t.text.len()];
                continue;
            }
        }
        out.push(t);
    }
    out
}

/// Marks the tokens that are parameters: `?`, `?N`, `:name`, `@name`, `$name` (joined by
/// [`merge_parameters`]).
fn group_params(tokens: &[Token<'_>]) -> Vec<bool> {
    tokens
        .iter()
        .map(|t| {
            t.kind == TokenKind::Punct
                && (t.text == "?"
                    || (t.text.len() > 1
                        && ["?", ":", "@", "$"].iter().any(|p| t.text.starts_with(p))))
        })
        .collect()
}

/// The affinity of each top-level `CAST(.. AS type)` result column of a plain SELECT (or a
/// RETURNING clause); `None` when the list cannot be split reliably.
fn result_casts(tokens: &[Token<'_>]) -> Option<Vec<Option<Affinity>>> {
    // The result list is the first SELECT or RETURNING at the top level (a CTE's own SELECT sits
    // inside parentheses).
    let mut level = 0i32;
    let start = tokens.iter().position(|t| {
        match t.text {
            "(" => level += 1,
            ")" => level -= 1,
            _ => {}
        }
        level == 0 && (t.is_word("SELECT") || t.is_word("RETURNING"))
    })?;
    let mut items: Vec<Vec<&Token<'_>>> = vec![Vec::new()];
    let mut depth = 0i32;
    for t in &tokens[start + 1..] {
        match t.text {
            "(" => depth += 1,
            ")" => depth -= 1,
            "," if depth == 0 => {
                items.push(Vec::new());
                continue;
            }
            _ => {}
        }
        if depth == 0
            && (t.is_word("FROM")
                || t.is_word("WHERE")
                || t.is_word("ORDER")
                || t.is_word("LIMIT")
                || t.is_word("GROUP"))
        {
            break;
        }
        if depth < 0 {
            return None;
        }
        items.last_mut().expect("starts with one item").push(t);
    }
    if items.iter().any(|i| {
        i.first().is_some_and(|t| t.text == "*") || i.iter().any(|t| t.text == "*" && i.len() == 3)
    }) {
        return None;
    }
    Some(
        items
            .iter()
            .map(|item| {
                let first = item.first()?;
                if !first.is_word("CAST") || item.get(1)?.text != "(" {
                    return None;
                }
                // CAST ( expr AS type ) [[AS] alias]
                let mut depth = 0;
                for (k, t) in item.iter().enumerate().skip(1) {
                    match t.text {
                        "(" => depth += 1,
                        ")" => {
                            depth -= 1;
                            if depth == 0 {
                                let ty: Vec<&str> = item[..k]
                                    .iter()
                                    .rev()
                                    .take_while(|t| !t.is_word("AS"))
                                    .map(|t| t.text)
                                    .collect();
                                let ty: Vec<&str> = ty.into_iter().rev().collect();
                                return Some(Affinity::of(&ty.join(" ")));
                            }
                        }
                        _ => {}
                    }
                }
                None
            })
            .collect(),
    )
}

/// A Rust field name for a result column name, or `None` when it is not one.
fn field_ident(name: &str) -> Option<syn::Ident> {
    let ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        return None;
    }
    syn::parse_str::<syn::Ident>(name)
        .ok()
        .or_else(|| Some(syn::Ident::new_raw(name, Span::call_site())))
}

struct QueryInput {
    lit: LitStr,
    args: Vec<Expr>,
}

impl Parse for QueryInput {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let lit: LitStr = input.parse()?;
        let args = parse_args(input)?;
        Ok(QueryInput { lit, args })
    }
}

struct QueryAsInput {
    ty: Type,
    lit: LitStr,
    args: Vec<Expr>,
}

impl Parse for QueryAsInput {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let ty: Type = input.parse()?;
        input.parse::<Token![,]>()?;
        let lit: LitStr = input.parse()?;
        let args = parse_args(input)?;
        Ok(QueryAsInput { ty, lit, args })
    }
}

fn parse_args(input: ParseStream<'_>) -> syn::Result<Vec<Expr>> {
    if input.is_empty() {
        return Ok(Vec::new());
    }
    input.parse::<Token![,]>()?;
    let args: Punctuated<Expr, Token![,]> = Punctuated::parse_terminated(input)?;
    Ok(args.into_iter().collect())
}
