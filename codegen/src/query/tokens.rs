//! A statement's tokens as the checker's readings share them: comments dropped, each parameter
//! and each operator one token, the partner of each parenthesis and the index of each
//! parameter.
//!
//! Invariant: the statement is lexed once, here; the readings (bindings, scopes, the result's
//! casts) only walk this list.

use crate::sql::{self, Token, TokenKind};

/// A statement's tokens without comments, each parameter and each operator one token, with what
/// the readings of the text share: the partner of each parenthesis and the 1-based index of each
/// parameter.
pub(super) struct Tokens<'a> {
    pub(super) list: Vec<Token<'a>>,
    pub(super) partner: Vec<Option<usize>>,
    pub(super) param: Vec<Option<usize>>,
}

impl<'a> Tokens<'a> {
    /// The tokens of `sql_text`; `named` gives the index SQLite assigned a named parameter
    /// (`:id`). `Err` says where the text does not lex.
    pub(super) fn read(
        sql_text: &'a str,
        named: impl Fn(&str) -> Option<usize>,
    ) -> Result<Tokens<'a>, String> {
        let list = merge_tokens(
            sql_text,
            sql::tokenize(sql_text)
                .map_err(|e| format!("unterminated {} on line {}", e.what, e.line))?
                .into_iter()
                .filter(|t| t.kind != TokenKind::Comment)
                .collect(),
        );
        // `?` takes the number after the largest before it, `?N` its own, a name SQLite's.
        let mut sequential = 0usize;
        let param = list
            .iter()
            .map(|t| {
                if !is_param(t) {
                    return None;
                }
                let n = match t.text.strip_prefix('?') {
                    Some("") => Some(sequential + 1),
                    Some(n) => n.parse().ok(),
                    None => named(t.text),
                };
                if let Some(n) = n {
                    sequential = sequential.max(n);
                }
                n
            })
            .collect();
        Ok(Tokens {
            partner: partners(&list),
            param,
            list,
        })
    }
}

/// The partner of each parenthesis (`None` for other tokens, and for an unbalanced one).
fn partners(tokens: &[Token<'_>]) -> Vec<Option<usize>> {
    let mut out = vec![None; tokens.len()];
    let mut open = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        match t.text {
            "(" => open.push(i),
            ")" => {
                if let Some(o) = open.pop() {
                    out[o] = Some(i);
                    out[i] = Some(o);
                }
            }
            _ => {}
        }
    }
    out
}

/// Operators of more than one character.
const OPERATORS: &[&str] = &["<=", ">=", "<>", "!=", "==", "||", "<<", ">>", "->", "->>"];

/// Joins each parameter into one token: `?` with an adjacent number (`?3`), and `:`, `@` or `$`
/// with an adjacent name (`:id`); and each operator (`<=`, `||`, ..).
fn merge_tokens<'a>(src: &'a str, tokens: Vec<Token<'a>>) -> Vec<Token<'a>> {
    let mut out: Vec<Token<'a>> = Vec::with_capacity(tokens.len());
    for t in tokens {
        if let Some(prev) = out.last_mut() {
            let adjacent = prev.offset + prev.text.len() == t.offset;
            let joined = &src[prev.offset..t.offset + t.text.len()];
            let joins = matches!(
                (prev.text, t.kind),
                ("?", TokenKind::Number) | (":" | "@" | "$", TokenKind::Word)
            ) || (t.kind == TokenKind::Punct && OPERATORS.contains(&joined));
            if adjacent && joins && prev.kind == TokenKind::Punct {
                prev.text = joined;
                continue;
            }
        }
        out.push(t);
    }
    out
}

/// True for a parameter: `?`, `?N`, `:name`, `@name`, `$name` (joined by [`merge_tokens`]).
fn is_param(t: &Token<'_>) -> bool {
    t.kind == TokenKind::Punct
        && (t.text == "?"
            || (t.text.len() > 1 && ["?", ":", "@", "$"].iter().any(|p| t.text.starts_with(p))))
}
