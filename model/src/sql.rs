//! A small SQL lexer: enough to split files into statements, attach comments to what they document
//! and normalize text for hashing. It never decides what SQL means; SQLite does that.

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// A `-- line` or `/* block */` comment.
    Comment,
    /// A keyword or bare identifier.
    Word,
    /// A quoted identifier: `"x"`, `` `x` `` or `[x]`.
    QuotedIdent,
    /// A string literal `'x'` or blob literal `x'00'`.
    String,
    /// A numeric literal.
    Number,
    /// Any other single character (punctuation, operators).
    Punct,
}

/// One token with the line (1-based) it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token<'a> {
    /// What the token is.
    pub kind: TokenKind,
    /// The exact source text.
    pub text: &'a str,
    /// 1-based line of the first character.
    pub line: usize,
    /// Byte offset of the first character.
    pub offset: usize,
    /// True for a comment that follows other tokens on its line (a trailing comment).
    pub trailing: bool,
}

impl Token<'_> {
    /// The text of a comment without its markers, trimmed.
    pub fn comment_text(&self) -> &str {
        let t = self.text;
        let inner = if let Some(rest) = t.strip_prefix("--") {
            rest
        } else {
            t.trim_start_matches("/*").trim_end_matches("*/")
        };
        inner.trim()
    }

    /// True when this word token equals `kw`, ignoring ASCII case.
    pub fn is_word(&self, kw: &str) -> bool {
        self.kind == TokenKind::Word && self.text.eq_ignore_ascii_case(kw)
    }

    /// The identifier this token names, with quotes removed.
    pub fn ident(&self) -> String {
        match self.kind {
            TokenKind::QuotedIdent => {
                let inner = &self.text[1..self.text.len() - 1];
                match self.text.as_bytes()[0] {
                    b'"' => inner.replace("\"\"", "\""),
                    b'`' => inner.replace("``", "`"),
                    _ => inner.to_string(),
                }
            }
            _ => self.text.to_string(),
        }
    }
}

/// An unterminated literal or comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexError {
    /// 1-based line where the unterminated token starts.
    pub line: usize,
    /// What was left open.
    pub what: &'static str,
}

/// Splits `src` into tokens; whitespace is dropped, comments are kept.
pub fn tokenize(src: &str) -> Result<Vec<Token<'_>>, LexError> {
    let bytes = src.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    let mut line = 1;
    let mut line_has_token = false;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        let start_line = line;
        let kind;
        match c {
            b'\n' => {
                line += 1;
                line_has_token = false;
                i += 1;
                continue;
            }
            c if c.is_ascii_whitespace() => {
                i += 1;
                continue;
            }
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                kind = TokenKind::Comment;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                loop {
                    if i + 1 >= bytes.len() {
                        return Err(LexError {
                            line: start_line,
                            what: "block comment",
                        });
                    }
                    if bytes[i] == b'*' && bytes[i + 1] == b'/' {
                        i += 2;
                        break;
                    }
                    if bytes[i] == b'\n' {
                        line += 1;
                    }
                    i += 1;
                }
                kind = TokenKind::Comment;
            }
            b'\'' | b'"' | b'`' | b'[' => {
                let close = if c == b'[' { b']' } else { c };
                i = scan_quoted(bytes, i, close, &mut line).ok_or(LexError {
                    line: start_line,
                    what: if c == b'\'' {
                        "string literal"
                    } else {
                        "quoted identifier"
                    },
                })?;
                kind = if c == b'\'' {
                    TokenKind::String
                } else {
                    TokenKind::QuotedIdent
                };
            }
            b'x' | b'X' if bytes.get(i + 1) == Some(&b'\'') => {
                i = scan_quoted(bytes, i + 1, b'\'', &mut line).ok_or(LexError {
                    line: start_line,
                    what: "blob literal",
                })?;
                kind = TokenKind::String;
            }
            c if c.is_ascii_digit()
                || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) =>
            {
                while i < bytes.len()
                    && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.' || bytes[i] == b'_')
                {
                    i += 1;
                }
                kind = TokenKind::Number;
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 => {
                while i < bytes.len()
                    && (bytes[i].is_ascii_alphanumeric()
                        || bytes[i] == b'_'
                        || bytes[i] == b'$'
                        || bytes[i] >= 0x80)
                {
                    i += 1;
                }
                kind = TokenKind::Word;
            }
            _ => {
                i += src[i..].chars().next().map_or(1, char::len_utf8);
                kind = TokenKind::Punct;
            }
        }
        tokens.push(Token {
            kind,
            text: &src[start..i],
            line: start_line,
            offset: start,
            trailing: kind == TokenKind::Comment && line_has_token,
        });
        if kind != TokenKind::Comment {
            line_has_token = true;
        }
    }
    Ok(tokens)
}

fn scan_quoted(bytes: &[u8], open: usize, close: u8, line: &mut usize) -> Option<usize> {
    let mut i = open + 1;
    while i < bytes.len() {
        if bytes[i] == b'\n' {
            *line += 1;
        }
        if bytes[i] == close {
            // A doubled quote is an escaped quote, except for `[...]`.
            if close != b']' && bytes.get(i + 1) == Some(&close) {
                i += 2;
                continue;
            }
            return Some(i + 1);
        }
        i += 1;
    }
    None
}

/// One SQL statement of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement<'a> {
    /// The statement's text, from its first token to its terminating `;` (excluded).
    pub text: &'a str,
    /// 1-based line of its first token.
    pub line: usize,
    /// Its tokens without comments.
    pub tokens: Vec<Token<'a>>,
}

/// Splits a file into statements at top-level semicolons. A `CREATE TRIGGER` body runs to its
/// `END`, and `CASE ... END` nests.
pub fn statements(src: &str) -> Result<Vec<Statement<'_>>, LexError> {
    let tokens = tokenize(src)?;
    let mut out = Vec::new();
    let mut current: Vec<Token<'_>> = Vec::new();
    let mut depth = 0usize;
    let mut is_trigger = false;
    for tok in tokens {
        if tok.kind == TokenKind::Comment {
            continue;
        }
        if current.is_empty() {
            is_trigger = false;
            depth = 0;
        }
        if current.len() < 4
            && tok.is_word("TRIGGER")
            && current.first().is_some_and(|t| t.is_word("CREATE"))
        {
            is_trigger = true;
        }
        if is_trigger && (tok.is_word("BEGIN") || tok.is_word("CASE")) {
            depth += 1;
        } else if is_trigger && tok.is_word("END") {
            depth = depth.saturating_sub(1);
        }
        if tok.text == ";" && depth == 0 {
            if !current.is_empty() {
                out.push(finish(src, std::mem::take(&mut current)));
            }
            continue;
        }
        current.push(tok);
    }
    if !current.is_empty() {
        out.push(finish(src, current));
    }
    Ok(out)
}

fn finish<'a>(src: &'a str, tokens: Vec<Token<'a>>) -> Statement<'a> {
    let first = &tokens[0];
    let last = &tokens[tokens.len() - 1];
    Statement {
        text: &src[first.offset..last.offset + last.text.len()],
        line: first.line,
        tokens,
    }
}

/// The text without comments, tokens joined by one space, keywords and bare identifiers in lower
/// case. Two texts that differ only in comments, whitespace or keyword case normalize alike.
pub fn normalize(src: &str) -> Result<String, LexError> {
    let tokens = tokenize(src)?;
    Ok(join_tokens(
        tokens.iter().filter(|t| t.kind != TokenKind::Comment),
    ))
}

/// Joins tokens with single spaces, lower-casing words.
pub fn join_tokens<'a, 'b: 'a>(tokens: impl Iterator<Item = &'a Token<'b>>) -> String {
    let mut out = String::new();
    for t in tokens {
        if !out.is_empty() {
            out.push(' ');
        }
        if t.kind == TokenKind::Word {
            out.push_str(&t.text.to_ascii_lowercase());
        } else {
            out.push_str(t.text);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_whitespace_do_not_change_the_normal_form() {
        let a = "CREATE TABLE t (a TEXT, -- note\n b INTEGER);";
        let b = "create   table t(\n  a text,\n  /* other */ b integer\n);";
        assert_eq!(normalize(a).unwrap(), normalize(b).unwrap());
        assert_ne!(
            normalize("SELECT 'a b'").unwrap(),
            normalize("SELECT 'a  b'").unwrap(),
            "literals keep their spaces"
        );
    }

    #[test]
    fn statements_split_at_top_level_semicolons_only() {
        let src = "CREATE TABLE a (x TEXT DEFAULT ';');\n-- c;\nCREATE TRIGGER t AFTER INSERT ON a BEGIN\n  SELECT CASE WHEN 1 THEN 2 END;\n  SELECT 3;\nEND;\nSELECT 4";
        let stmts = statements(src).unwrap();
        assert_eq!(stmts.len(), 3);
        assert_eq!(stmts[1].line, 3);
        assert!(stmts[1].text.ends_with("END"));
        assert_eq!(stmts[2].text, "SELECT 4");
    }

    #[test]
    fn trailing_comments_are_marked_and_lines_counted() {
        let toks = tokenize("a, -- t\n-- above\nb").unwrap();
        let comments: Vec<_> = toks
            .iter()
            .filter(|t| t.kind == TokenKind::Comment)
            .map(|t| (t.comment_text(), t.trailing, t.line))
            .collect();
        assert_eq!(comments, vec![("t", true, 1), ("above", false, 2)]);
    }

    #[test]
    fn unterminated_literals_are_errors_with_a_line() {
        assert_eq!(
            tokenize("SELECT\n'abc").unwrap_err(),
            LexError {
                line: 2,
                what: "string literal"
            }
        );
        assert!(tokenize("/* open").is_err());
    }

    #[test]
    fn quoted_identifiers_unquote() {
        let toks = tokenize("\"a\"\"b\" [c d] `e`").unwrap();
        let names: Vec<_> = toks.iter().map(Token::ident).collect();
        assert_eq!(names, vec!["a\"b", "c d", "e"]);
    }
}
