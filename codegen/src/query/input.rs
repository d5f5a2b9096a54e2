//! Parsing the macro input: a string literal of SQL, then the arguments (`query!`), with the
//! target type first (`query_as!`); and the Rust field name of a result column.

use proc_macro2::Span;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, LitStr, Token, Type};

/// A Rust field name for a result column name, or `None` when it is not one.
pub(super) fn field_ident(name: &str) -> Option<syn::Ident> {
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

/// `query!`'s input: the SQL, then the arguments.
pub(super) struct QueryInput {
    pub(super) lit: LitStr,
    pub(super) args: Vec<Expr>,
}

impl Parse for QueryInput {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let lit: LitStr = input.parse()?;
        let args = parse_args(input)?;
        Ok(QueryInput { lit, args })
    }
}

/// `query_as!`'s input: the target type, the SQL, then the arguments.
pub(super) struct QueryAsInput {
    pub(super) ty: Type,
    pub(super) lit: LitStr,
    pub(super) args: Vec<Expr>,
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

/// The arguments after the SQL literal: none, or a comma and a comma-separated list.
fn parse_args(input: ParseStream<'_>) -> syn::Result<Vec<Expr>> {
    if input.is_empty() {
        return Ok(Vec::new());
    }
    input.parse::<Token![,]>()?;
    let args: Punctuated<Expr, Token![,]> = Punctuated::parse_terminated(input)?;
    Ok(args.into_iter().collect())
}
