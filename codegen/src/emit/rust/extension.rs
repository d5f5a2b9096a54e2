//! What an extension's module holds beyond a schema's own items: `EXTENSION`, the declaration
//! the runtime registers, and `query!` and `query_as!`, checked against the store's schema with
//! the extension's on top.
//!
//! The macros are `macro_rules!` wrappers that pass the extension's `schema.sql` to the store's
//! checker as a literal, so the checked SQL of a crate follows its own build with no
//! environment variable, file path or cache between the build script and the compiler.

use super::text::text_literal;
use crate::{Error, Project, Result};
use proc_macro2::TokenStream;
use quote::quote;

/// The extension's items, for the module at `module` (the path the crate includes it under).
pub(super) fn items(
    project: &Project,
    name: &str,
    rt: &syn::Path,
    module: &str,
) -> Result<TokenStream> {
    syn::parse_str::<syn::Path>(module).map_err(|e| Error::Emit {
        message: format!("the extension's module path `{module}` is not a Rust path: {e}"),
    })?;
    let schema_sql = text_literal(&project.schema_sql);
    let doc_query = format!(
        "`query!` for this crate: checked against the store's schema and the `{name}` \
         extension's (see `seed_agents_store::query!` for the forms it checks)."
    );
    let doc_query_as = format!(
        "`query_as!` for this crate: checked against the store's schema and the `{name}` \
         extension's (see `seed_agents_store::query_as!`)."
    );
    Ok(quote! {
        /// The extension this module declares: register it with
        /// `seed_agents_store::OpenOptions::extension` so that opening a database installs,
        /// migrates and verifies its tables under their own version key.
        pub const EXTENSION: #rt::Extension = #rt::Extension {
            name: #name,
            version: SCHEMA_VERSION,
            schema_sql: SCHEMA_SQL,
            migrations: MIGRATIONS,
            fingerprints: FINGERPRINTS,
            models: MODELS,
            postgres_schema: POSTGRES_SCHEMA,
            postgres_migrations: POSTGRES_MIGRATIONS,
            postgres_fingerprints: POSTGRES_FINGERPRINTS,
        };

        #[doc = #doc_query]
        macro_rules! query {
            ($($args:tt)*) => {
                #rt::query_in!(#name, #schema_sql, #module; $($args)*)
            };
        }
        #[allow(unused_imports)]
        pub(crate) use query;

        #[doc = #doc_query_as]
        macro_rules! query_as {
            ($($args:tt)*) => {
                #rt::query_as_in!(#name, #schema_sql, #module; $($args)*)
            };
        }
        #[allow(unused_imports)]
        pub(crate) use query_as;
    })
}
