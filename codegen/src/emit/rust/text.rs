//! Rust source text for generated items: doc attributes, code spans, escaped schema comments
//! and string literals.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

/// `#[doc = " line"]` per line (an empty string is a blank doc line).
pub(super) fn doc_attrs(lines: &[String]) -> TokenStream {
    let attrs = lines.iter().map(|l| {
        let text = if l.is_empty() {
            String::new()
        } else {
            format!(" {l}")
        };
        quote!(#[doc = #text])
    });
    quote!(#(#attrs)*)
}

/// `s` as an inline code span, with a fence longer than any backtick run inside.
pub(super) fn code_span(s: &str) -> String {
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// Schema comment text made safe for rustdoc: outside code spans, `<`, `[` and `]` are escaped
/// so they are neither HTML tags nor intra-doc links.
pub(super) fn escape_doc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_code = false;
    for ch in text.chars() {
        match ch {
            '`' => {
                in_code = !in_code;
                out.push(ch);
            }
            '<' | '[' | ']' if !in_code => {
                out.push('\\');
                out.push(ch);
            }
            _ => out.push(ch),
        }
    }
    out
}

/// A string literal for long texts: a raw string when that reads better.
pub(super) fn text_literal(text: &str) -> Literal {
    let needs_raw = text.contains(['\n', '"', '\\']) && !text.contains('\r');
    if !needs_raw {
        return Literal::string(text);
    }
    let mut hashes = 1;
    let mut run: Option<usize> = None;
    for ch in text.chars() {
        run = match (ch, run) {
            ('"', _) => Some(0),
            ('#', Some(n)) => {
                hashes = hashes.max(n + 2);
                Some(n + 1)
            }
            _ => None,
        };
    }
    let h = "#".repeat(hashes);
    format!("r{h}\"{text}\"{h}")
        .parse()
        .unwrap_or_else(|_| Literal::string(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doc_escaping() {
        assert_eq!(
            escape_doc("schedule:<id> and `a<b>` [x]"),
            "schedule:\\<id> and `a<b>` \\[x\\]"
        );
        assert_eq!(code_span("a"), "`a`");
        assert_eq!(code_span("a `b` c"), "``a `b` c``");
    }

    #[test]
    fn literals() {
        assert_eq!(text_literal("plain").to_string(), "\"plain\"");
        assert_eq!(text_literal("a\nb").to_string(), "r#\"a\nb\"#");
        assert_eq!(text_literal("x \"# y").to_string(), "r##\"x \"# y\"##");
    }
}
