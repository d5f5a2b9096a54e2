//! Expanding the query macros: the checked record or target type, the argument type checks
//! (spanned on the argument at fault) and the call into the runtime.

use super::describe::{Described, ResultColumn};
use super::input::{result_field, Nullability, QueryAsInput, QueryInput};
use super::Checker;
use crate::model::Affinity;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use std::collections::BTreeMap;
use syn::spanned::Spanned;
use syn::{Expr, LitStr};

/// The widest tuple the runtime's `Arguments` covers (the store's `arguments` module); a
/// statement with more arguments binds them through a slice.
const MOST_TYPED: usize = 12;

impl Checker {
    /// The Rust type of a result column: the table column's generated type, `Option` around it
    /// when the column is nullable or under an outer join; for an expression, `Option` of its
    /// cast type or of a dynamic value. An override in the alias (`"n!"`, `"n?"`) decides the
    /// `Option` instead.
    fn result_type(
        &self,
        lit: &LitStr,
        d: &Described,
        c: &ResultColumn,
        nullability: Option<Nullability>,
    ) -> syn::Result<TokenStream> {
        let rt = &self.rt();
        let origin = match &c.origin {
            Some((t, col)) => self.column_base(t, col)?,
            None => None,
        };
        let (ty, may_be_null) = match (origin, c.cast) {
            (Some((ty, not_null)), _) => (ty, !not_null || d.outer_join),
            (None, Some(affinity)) => (affinity_type(affinity), true),
            (None, None) if nullability == Some(Nullability::NonNull) => {
                return Err(syn::Error::new(
                    lit.span(),
                    format!(
                        "result column `{}` says it is never NULL, but its expression has no type \
                         the macro can infer; give it one with a CAST, as in \
                         `CAST(count(*) AS INTEGER) AS \"n!\"`",
                        c.name
                    ),
                ));
            }
            (None, None) => (quote!(#rt::rusqlite::types::Value), true),
        };
        let optional = match nullability {
            Some(Nullability::NonNull) => false,
            Some(Nullability::Nullable) => true,
            None => may_be_null,
        };
        Ok(if optional { quote!(Option<#ty>) } else { ty })
    }

    /// The PostgreSQL statement of the checked SQLite statement `lit`, parsed as PostgreSQL and
    /// with its parameters counted.
    fn postgres(&self, lit: &LitStr, d: &Described) -> syn::Result<String> {
        crate::postgres::translate_parsed(&d.parsed, d.params, &self.non_null).map_err(|m| {
            syn::Error::new(
                lit.span(),
                format!("this statement has no PostgreSQL rendering: {m}"),
            )
        })
    }

    fn describe_spanned(&self, lit: &LitStr) -> syn::Result<Described> {
        self.describe(&lit.value())
            .map_err(|m| syn::Error::new(lit.span(), m))
    }

    /// Argument checks, the `Query` constructor to call and the arguments, shared by `query!` and
    /// `query_as!`.
    fn arguments(
        &self,
        lit: &LitStr,
        d: &Described,
        args: &[Expr],
    ) -> syn::Result<(TokenStream, TokenStream, TokenStream)> {
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
        let mut refused: Option<syn::Error> = None;
        for (i, arg) in args.iter().enumerate() {
            let n = i + 1;
            for (t, c) in d.bindings.get(&n).into_iter().flatten() {
                if let Some((ty, not_null)) = self.column_type(t, c)? {
                    let ty = if not_null && d.nullable.contains(&n) {
                        quote!(Option<#ty>)
                    } else {
                        ty
                    };
                    checks.push(quote_spanned!(arg.span()=> #rt::bind_check::<#ty, _>(&(#arg));));
                }
            }
            if let Some(affinity) = d.casts.get(&n) {
                let ty = affinity_type(*affinity);
                checks.push(quote_spanned!(arg.span()=> #rt::cast_check::<#ty, _>(&(#arg));));
            }
            if let Some(u) = d.unknowable.get(&n) {
                let e = syn::Error::new(
                    arg.span(),
                    format!(
                        "the type of this argument cannot be checked: parameter `{p}` is compared \
                         with `{c}`, a column of `{s}`, a CTE, subquery or table function whose \
                         column types the macro does not know; compare `{p}` with a column of a \
                         schema.sql table, or give it a type with `CAST({p} AS INTEGER)` (or \
                         TEXT, REAL, BLOB)",
                        p = u.param,
                        c = u.column,
                        s = u.source
                    ),
                );
                match &mut refused {
                    Some(all) => all.combine(e),
                    None => refused = Some(e),
                }
            }
        }
        if let Some(e) = refused {
            return Err(e);
        }
        // Type-checked, never run: each argument is evaluated once, where it is bound.
        let checks = if checks.is_empty() {
            TokenStream::new()
        } else {
            quote!(if false { #(#checks)* })
        };
        // Up to the runtime's widest `Arguments` tuple, a tuple of references that SQLite binds
        // by each argument's own type; otherwise a slice of trait objects.
        if (1..=MOST_TYPED).contains(&args.len()) {
            let each = args.iter().map(|a| quote_spanned!(a.span()=> &(#a)));
            return Ok((checks, quote!(typed), quote!(&(#(#each,)*))));
        }
        let params = args
            .iter()
            .map(|a| quote_spanned!(a.span()=> &(#a) as &dyn #rt::rusqlite::ToSql));
        Ok((checks, quote!(new), quote!(&[#(#params),*])))
    }

    /// `query!("SQL", args...)`: a `Query` (the store's runtime type) whose rows are an anonymous record typed from the
    /// schema.
    ///
    /// # Errors
    /// A `syn::Error` spanned on the literal or argument at fault.
    pub fn query(&self, input: TokenStream) -> syn::Result<TokenStream> {
        let QueryInput { lit, args } = syn::parse2(input)?;
        let d = self.describe_spanned(&lit)?;
        let rt = &self.rt();
        let (checks, ctor, params) = self.arguments(&lit, &d, &args)?;
        let mut fields = Vec::new();
        let mut names = Vec::new();
        let mut types = Vec::new();
        let mut origins = Vec::new();
        let mut seen = BTreeMap::new();
        for c in &d.columns {
            let (field, nullability) =
                result_field(&c.name).map_err(|m| syn::Error::new(lit.span(), m))?;
            if let Some(prev) = seen.insert(field.to_string(), c.name.clone()) {
                return Err(syn::Error::new(
                    lit.span(),
                    format!("result columns `{prev}` and `{}` would both be the field `{field}`; rename one with `AS`", c.name),
                ));
            }
            let ty = self.result_type(&lit, &d, c, nullability)?;
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
        let pg = self.postgres(&lit, &d)?;
        if fields.is_empty() {
            // No result columns: rows are `()`, so statements like these share one type.
            return Ok(quote! {{
                #checks
                fn __decode(_: &dyn #rt::Columns) -> #rt::Result<()> {
                    Ok(())
                }
                #rt::Query::#ctor(#sql, #pg, #params, __decode as fn(&dyn #rt::Columns) -> #rt::Result<()>)
            }});
        }
        Ok(quote! {{
            #checks
            /// A row of a checked query. It derives nothing: a derive per query is most of what
            /// checked SQL would cost the compiler (use `query_as!` with your own type for that).
            #[allow(non_camel_case_types)]
            struct Record { #(#fields,)* }
            fn __decode(row: &dyn #rt::Columns) -> #rt::Result<Record> {
                #decode
            }
            #rt::Query::#ctor(#sql, #pg, #params, __decode)
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
        let (checks, ctor, params) = self.arguments(&lit, &d, &args)?;
        let mut fields = Vec::new();
        let mut field_checks = Vec::new();
        let row = format_ident!("row");
        for (i, c) in d.columns.iter().enumerate() {
            let (field, nullability) =
                result_field(&c.name).map_err(|m| syn::Error::new(lit.span(), m))?;
            let col_ty = self.result_type(&lit, &d, c, nullability)?;
            let (table, column) = c.origin.clone().unwrap_or_default();
            let marker = format_ident!("{}", field.to_string().trim_start_matches("r#"));
            field_checks.push(quote_spanned! {lit.span()=>
                {
                    #[allow(non_camel_case_types, dead_code)]
                    struct #marker;
                    #rt::field_check_by::<#col_ty, #ty, _, _>(|r: &#ty| &r.#field, #marker);
                }
            });
            // `row` is named with one span, the function's and its uses': the literal comes
            // from the caller (through an extension's `macro_rules!` wrapper, of other hygiene).
            let value = quote_spanned!(lit.span()=> #rt::FromColumn::from_column(#row, #i, #table, #column)?);
            fields.push(quote_spanned!(lit.span()=> #field: #value));
        }
        let sql = lit.value();
        let pg = self.postgres(&lit, &d)?;
        Ok(quote! {{
            #checks
            #(#field_checks)*
            fn __decode(#row: &dyn #rt::Columns) -> #rt::Result<#ty> {
                Ok(#ty { #(#fields,)* })
            }
            #rt::Query::#ctor(#sql, #pg, #params, __decode)
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
                pub fn from_row(row: &dyn #rt::Columns) -> #rt::Result<Self> {
                    Ok(Self { #(#decode,)* })
                }
            }
        })
    }
}

/// The Rust type of a `CAST(.. AS type)`.
fn affinity_type(affinity: Affinity) -> TokenStream {
    match affinity {
        Affinity::Integer => quote!(i64),
        Affinity::Text => quote!(String),
        Affinity::Blob => quote!(Vec<u8>),
        Affinity::Real | Affinity::Numeric => quote!(f64),
    }
}
