//! What [`Options::serde_feature`](super::Options::serde_feature) adds to a table's module: a
//! `Row` that derives `Serialize` and `Deserialize`, and enums that serialize as their stored
//! text, all under `#[cfg(feature = "...")]` of the including crate.
//!
//! Invariant: serde is reached only through the runtime path (`<runtime>::serde`, also given to
//! the derive as `serde(crate = ...)`), so the includer needs no `serde` dependency of its own
//! under that name; and a row's serialized field names are its columns' SQL names.

use super::table::TableGen;
use crate::typing::TypedColumn;
use proc_macro2::TokenStream;
use quote::quote;

impl TableGen<'_> {
    /// The lines `Row`'s docs gain (none without the feature).
    pub(super) fn row_serde_doc(&self) -> Vec<String> {
        let Some(feature) = self.serde else {
            return Vec::new();
        };
        vec![
            String::new(),
            format!("With the `{feature}` feature it derives `Serialize` and `Deserialize`, each"),
            "field named by its column's SQL name.".into(),
        ]
    }

    /// The lines an enum's docs gain (none without the feature).
    pub(super) fn enum_serde_doc(&self) -> Vec<String> {
        let Some(feature) = self.serde else {
            return Vec::new();
        };
        vec![
            String::new(),
            format!("With the `{feature}` feature it serializes as the text stored in the column"),
            "(what [`as_str`](Self::as_str) returns) and deserializes from one of those texts only."
                .into(),
        ]
    }

    /// The attributes that make `Row` derive serde's traits (none without the feature).
    pub(super) fn row_serde_attrs(&self) -> TokenStream {
        let Some(feature) = self.serde else {
            return TokenStream::new();
        };
        let rt = self.rt;
        // `serde(crate = "...")` takes the path as a string.
        let krate = quote!(#rt::serde).to_string().replace(' ', "");
        quote! {
            #[cfg_attr(
                feature = #feature,
                derive(#rt::serde::Serialize, #rt::serde::Deserialize),
                serde(crate = #krate)
            )]
        }
    }

    /// A field's rename to its column's SQL name, for a column whose name is not its field's
    /// (one not already in snake_case); serde names every other field by the column already.
    pub(super) fn field_serde_attrs(&self, c: &TypedColumn<'_>) -> TokenStream {
        let Some(feature) = self.serde else {
            return TokenStream::new();
        };
        let field = c.field.to_string();
        if field.strip_prefix("r#").unwrap_or(&field) == c.col.name {
            return TokenStream::new();
        }
        let column = &c.col.name;
        quote!(#[cfg_attr(feature = #feature, serde(rename = #column))])
    }

    /// `Serialize` as the stored text and `Deserialize` from it, refusing any other text with
    /// serde's unknown-variant error, which lists the values the column takes.
    pub(super) fn enum_serde_impls(&self, name: &syn::Ident, values: &[&str]) -> TokenStream {
        let Some(feature) = self.serde else {
            return TokenStream::new();
        };
        let rt = self.rt;
        quote! {
            #[cfg(feature = #feature)]
            impl #rt::serde::Serialize for #name {
                fn serialize<S: #rt::serde::Serializer>(
                    &self,
                    serializer: S,
                ) -> ::core::result::Result<S::Ok, S::Error> {
                    serializer.serialize_str(self.as_str())
                }
            }

            #[cfg(feature = #feature)]
            impl<'de> #rt::serde::Deserialize<'de> for #name {
                fn deserialize<D: #rt::serde::Deserializer<'de>>(
                    deserializer: D,
                ) -> ::core::result::Result<Self, D::Error> {
                    let s = <::std::string::String as #rt::serde::Deserialize>::deserialize(deserializer)?;
                    Self::parse(&s).ok_or_else(|| {
                        <D::Error as #rt::serde::de::Error>::unknown_variant(&s, &[#(#values),*])
                    })
                }
            }
        }
    }
}
