//! The rules a sea-query `SELECT` passes before [`crate::Store::select`] runs it, and its
//! PostgreSQL rendering with SQLite's meaning: the same rules the checked statements'
//! translation keeps (`seed_agents_codegen::postgres::translate`), applied to sea-query's tree
//! instead of SQL text, so the runtime never parses SQL.
//!
//! Invariant: it fails closed, on both backends alike. An expression, operator or function not
//! listed in [`refusal`] is refused, naming it, before anything runs, so a listing that works on
//! SQLite works, with the same answer, on PostgreSQL. What the PostgreSQL rendering changes:
//! `LIKE` folds ASCII case on both sides and has no escape character unless it says so, and
//! `lower`/`upper` fold the ASCII letters only, as SQLite's do; a sort key that may be NULL
//! keeps SQLite's NULL order (first when ascending, last when descending). Its parameters are
//! the SQLite rendering's, in the same order ([`postgres`] checks it).

use std::cell::{Cell, RefCell};

use sea_query::{
    BinOper, EscapeBuilder, Expr, Func, Keyword, OperLeftAssocDecider, OrderExpr,
    PrecedenceDecider, QueryBuilder, QuotedBuilder, SelectDistinct, SelectStatement, SqlWriter,
    SubQueryStatement, TableRefBuilder, UnOper, Value,
};

use crate::error::Result;

/// Refuses `statement` when it holds anything [`refusal`] does not allow.
///
/// # Errors
/// [`crate::Error::Invalid`] (`statement`) naming the first construct refused.
pub(crate) fn check(statement: &SelectStatement) -> Result<()> {
    let rules = Rules::new(sea_query::SqliteQueryBuilder, false);
    // The rendering only walks the tree; the text is SQLite's and not used.
    let _ = statement.build_any(&rules);
    rules.verdict()
}

/// `statement` rendered for PostgreSQL with SQLite's meaning, given its SQLite rendering's
/// parameters: the text, after the same checks as [`check`].
///
/// # Errors
/// As [`check`]; [`crate::Error::Invalid`] too if the rendering's parameters were not the
/// SQLite rendering's (an unforeseen form, refused rather than bound out of place).
#[cfg(feature = "postgres")]
pub(crate) fn postgres(statement: &SelectStatement, sqlite: &sea_query::Values) -> Result<String> {
    let rules = Rules::new(sea_query::PostgresQueryBuilder, true);
    let (sql, values) = statement.build_any(&rules);
    rules.verdict()?;
    if values.0 != sqlite.0 {
        return Err(refused(
            "a form whose PostgreSQL parameters differ from SQLite's".into(),
        ));
    }
    Ok(sql)
}

/// Why `expr` (its own node, not its children, which are checked as they are rendered) is
/// refused; `None` when it means the same on both backends once rendered by [`Rules`].
fn refusal(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Column(_)
        | Expr::Tuple(_)
        | Expr::Value(_)
        | Expr::Values(_)
        | Expr::Constant(_)
        | Expr::SubQuery(..)
        | Expr::Case(_)
        | Expr::Unary(UnOper::Not, _)
        | Expr::Keyword(Keyword::Null) => None,
        Expr::Binary(_, op, _) => match op {
            BinOper::And
            | BinOper::Or
            | BinOper::Is
            | BinOper::IsNot
            | BinOper::In
            | BinOper::NotIn
            | BinOper::Between
            | BinOper::NotBetween
            | BinOper::Equal
            | BinOper::NotEqual
            | BinOper::SmallerThan
            | BinOper::GreaterThan
            | BinOper::SmallerThanOrEqual
            | BinOper::GreaterThanOrEqual
            // `+` and `-` differ only past 64-bit integers, which no stored value reaches.
            | BinOper::Add
            | BinOper::Sub
            | BinOper::Like
            | BinOper::NotLike
            | BinOper::Escape => None,
            // `*`, `/` and `%` (a division by zero is NULL in SQLite, an error in PostgreSQL),
            // the bit operators, casts and every backend's own operators.
            other => Some(format!("the operator {other:?}")),
        },
        Expr::FunctionCall(call) => {
            if call.get_filter().is_some() {
                return Some("an aggregate's FILTER clause".into());
            }
            match call.get_func() {
                Func::Count | Func::Sum | Func::Coalesce | Func::IfNull => None,
                Func::Lower | Func::Upper if call.get_args().len() == 1 => None,
                // Scalar max/min skip NULLs on PostgreSQL (GREATEST/LEAST), not on SQLite.
                Func::Max | Func::Min if call.get_args().len() == 1 => None,
                other => Some(format!(
                    "the function {other:?} with {} arguments",
                    call.get_args().len()
                )),
            }
        }
        Expr::Keyword(keyword) => Some(format!("the keyword {keyword:?}")),
        Expr::Custom(sql) | Expr::CustomWithExpr(sql, _) => Some(format!("raw SQL `{sql}`")),
        Expr::AsEnum(..) => Some("a cast to a database enum type".into()),
        Expr::TypeName(_) => Some("a type name".into()),
        other => Some(format!("the expression {other:?}")),
    }
}

fn refused(what: String) -> crate::Error {
    crate::values::check::invalid(
        "statement",
        format!(
            "{what} is not allowed in `Store::select`: SQLite and PostgreSQL would not give it \
             the same meaning"
        ),
    )
}

/// A query builder that renders through `inner` (SQLite's, or PostgreSQL's with SQLite's
/// meaning when `postgres`), checking every expression it renders.
struct Rules<B> {
    inner: B,
    postgres: bool,
    /// The first construct refused.
    refused: RefCell<Option<String>>,
    /// How deep in expressions the rendering is, and the bare column the last expression
    /// rendered at the top of a sort key was (for its NULL order).
    depth: Cell<usize>,
    sort_column: RefCell<Option<String>>,
}

impl<B: QueryBuilder> Rules<B> {
    fn new(inner: B, postgres: bool) -> Rules<B> {
        Rules {
            inner,
            postgres,
            refused: RefCell::new(None),
            depth: Cell::new(0),
            sort_column: RefCell::new(None),
        }
    }

    fn refuse(&self, what: String) {
        self.refused.borrow_mut().get_or_insert(what);
    }

    fn verdict(&self) -> Result<()> {
        match self.refused.borrow_mut().take() {
            Some(what) => Err(refused(what)),
            None => Ok(()),
        }
    }

    /// `translate(e, from, to)`: ASCII case folded as SQLite's `lower`/`upper`/`LIKE` fold it.
    fn ascii_case(&self, e: &Expr, lower: bool, sql: &mut impl SqlWriter) {
        const UPPER: &str = "'ABCDEFGHIJKLMNOPQRSTUVWXYZ'";
        const LOWER: &str = "'abcdefghijklmnopqrstuvwxyz'";
        let (from, to) = if lower {
            (UPPER, LOWER)
        } else {
            (LOWER, UPPER)
        };
        sql.write_str("translate(").unwrap();
        self.prepare_expr(e, sql);
        sql.write_str(&format!(", {from}, {to})")).unwrap();
    }

    /// `lhs [NOT] LIKE pattern [ESCAPE e]` with SQLite's meaning on PostgreSQL.
    fn like(&self, lhs: &Expr, not: bool, rhs: &Expr, sql: &mut impl SqlWriter) {
        self.ascii_case(lhs, true, sql);
        sql.write_str(if not { " NOT LIKE " } else { " LIKE " })
            .unwrap();
        match rhs {
            Expr::Binary(pattern, BinOper::Escape, escape) => {
                self.ascii_case(pattern, true, sql);
                sql.write_str(" ESCAPE ").unwrap();
                self.prepare_expr(escape, sql);
            }
            pattern => {
                self.ascii_case(pattern, true, sql);
                // SQLite's LIKE has no escape character unless given one.
                sql.write_str(" ESCAPE ''").unwrap();
            }
        }
    }
}

impl<B: QueryBuilder> QuotedBuilder for Rules<B> {
    fn quote(&self) -> sea_query::Quote {
        self.inner.quote()
    }
}

impl<B: QueryBuilder> EscapeBuilder for Rules<B> {
    fn needs_escape(&self, s: &str) -> bool {
        self.inner.needs_escape(s)
    }

    fn write_escaped(&self, buffer: &mut impl std::fmt::Write, string: &str) {
        self.inner.write_escaped(buffer, string)
    }

    fn unescape_string(&self, string: &str) -> String {
        self.inner.unescape_string(string)
    }
}

impl<B: QueryBuilder> TableRefBuilder for Rules<B> {}

impl<B: QueryBuilder> OperLeftAssocDecider for Rules<B> {
    fn well_known_left_associative(&self, op: &BinOper) -> bool {
        self.inner.well_known_left_associative(op)
    }
}

impl<B: QueryBuilder> PrecedenceDecider for Rules<B> {
    fn inner_expr_well_known_greater_precedence(
        &self,
        inner: &Expr,
        outer_oper: &sea_query::Oper,
    ) -> bool {
        self.inner
            .inner_expr_well_known_greater_precedence(inner, outer_oper)
    }
}

// Structural rendering (statements, clauses, conditions) keeps the trait's defaults, so that it
// recurses through `Rules`; only the leaves a backend spells its own way go to `inner`.
impl<B: QueryBuilder> QueryBuilder for Rules<B> {
    fn placeholder(&self) -> (&'static str, bool) {
        self.inner.placeholder()
    }

    fn prepare_expr(&self, expr: &Expr, sql: &mut impl SqlWriter) {
        let depth = self.depth.get();
        self.depth.set(depth + 1);
        if let Some(what) = refusal(expr) {
            self.refuse(what);
        }
        match expr {
            Expr::Binary(lhs, op @ (BinOper::Like | BinOper::NotLike), rhs) if self.postgres => {
                self.like(lhs, *op == BinOper::NotLike, rhs, sql)
            }
            Expr::FunctionCall(call)
                if self.postgres && matches!(call.get_func(), Func::Lower | Func::Upper) =>
            {
                let lower = matches!(call.get_func(), Func::Lower);
                match call.get_args() {
                    [arg] => self.ascii_case(arg, lower, sql),
                    _ => self.inner.prepare_expr(expr, sql), // refused above
                }
            }
            _ => self.prepare_expr_common(expr, sql),
        }
        self.depth.set(depth);
        if depth == 0 {
            *self.sort_column.borrow_mut() = match expr {
                Expr::Column(column) => column.column().map(|c| c.to_string()),
                _ => None,
            };
        }
    }

    fn prepare_order(&self, order_expr: &OrderExpr, sql: &mut impl SqlWriter) {
        // sea-query keeps an order's parts to itself: what it says is read off the inner
        // builder's own rendering of it, alone.
        let mut alone = String::new();
        self.inner.prepare_order_expr(order_expr, &mut alone);
        let descending = if alone.ends_with(" DESC") || alone.contains(" DESC NULLS ") {
            true
        } else if alone.ends_with(" ASC") || alone.contains(" ASC NULLS ") {
            false
        } else {
            return self.refuse("an order by a list of values".into());
        };
        sql.write_str(if descending { " DESC" } else { " ASC" })
            .unwrap();
        let nulls = if alone.ends_with(" NULLS FIRST") {
            Some(" NULLS FIRST")
        } else if alone.ends_with(" NULLS LAST") {
            Some(" NULLS LAST")
        } else if !self.postgres
            || self
                .sort_column
                .borrow()
                .as_deref()
                .is_some_and(|c| crate::schema::NON_NULL_COLUMNS.contains(&c))
        {
            // SQLite's own order, or a key that is never NULL: PostgreSQL's default keeps an
            // index serving the order.
            None
        } else if descending {
            Some(" NULLS LAST")
        } else {
            Some(" NULLS FIRST")
        };
        if let Some(nulls) = nulls {
            sql.write_str(nulls).unwrap();
        }
    }

    fn prepare_select_distinct(&self, distinct: &SelectDistinct, sql: &mut impl SqlWriter) {
        match distinct {
            SelectDistinct::All | SelectDistinct::Distinct => {
                self.inner.prepare_select_distinct(distinct, sql)
            }
            other => self.refuse(format!("{other:?}")),
        }
    }

    fn prepare_select_lock(&self, _: &sea_query::LockClause, _: &mut impl SqlWriter) {
        self.refuse("a row lock (a listing only reads)".into());
    }

    fn prepare_table_sample(&self, select: &SelectStatement, _: &mut impl SqlWriter) {
        let mut sample = String::new();
        self.inner.prepare_table_sample(select, &mut sample);
        if !sample.is_empty() {
            self.refuse("a table sample".into());
        }
    }

    fn prepare_select_into(&self, _: &sea_query::SelectInto, _: &mut impl SqlWriter) {
        self.refuse("SELECT INTO (a listing only reads)".into());
    }

    fn prepare_window_statement(&self, _: &sea_query::WindowStatement, _: &mut impl SqlWriter) {
        self.refuse("a window function".into());
    }

    fn prepare_query_statement(&self, query: &SubQueryStatement, sql: &mut impl SqlWriter) {
        match query {
            SubQueryStatement::SelectStatement(select) => {
                self.prepare_select_statement(select, sql)
            }
            SubQueryStatement::WithStatement(with) => self.prepare_with_query(with, sql),
            _ => self.refuse("a statement that writes".into()),
        }
    }

    fn prepare_explain_statement(&self, _: &sea_query::ExplainStatement, _: &mut impl SqlWriter) {
        self.refuse("EXPLAIN".into());
    }

    fn prepare_function_name(&self, function: &Func, sql: &mut impl SqlWriter) {
        self.inner.prepare_function_name(function, sql)
    }

    fn prepare_bin_oper(&self, bin_oper: &BinOper, sql: &mut impl SqlWriter) {
        self.inner.prepare_bin_oper(bin_oper, sql)
    }

    fn prepare_sub_query_oper(&self, oper: &sea_query::SubQueryOper, sql: &mut impl SqlWriter) {
        self.inner.prepare_sub_query_oper(oper, sql)
    }

    fn prepare_value(&self, value: Value, sql: &mut impl SqlWriter) {
        self.inner.prepare_value(value, sql)
    }

    fn write_value(&self, buf: &mut impl std::fmt::Write, value: &Value) -> std::fmt::Result {
        self.inner.write_value(buf, value)
    }

    fn write_string_quoted(&self, string: &str, buffer: &mut impl std::fmt::Write) {
        self.inner.write_string_quoted(string, buffer)
    }

    fn write_bytes(&self, bytes: &[u8], buffer: &mut impl std::fmt::Write) {
        self.inner.write_bytes(bytes, buffer)
    }

    fn if_null_function(&self) -> &str {
        self.inner.if_null_function()
    }

    fn greatest_function(&self) -> &str {
        self.inner.greatest_function()
    }

    fn least_function(&self) -> &str {
        self.inner.least_function()
    }

    fn char_length_function(&self) -> &str {
        self.inner.char_length_function()
    }
}

#[cfg(all(test, feature = "postgres"))]
mod tests {
    use super::*;
    use crate::schema::runs::Column;
    use sea_query::{ExprTrait, LockType, NullOrdering, Order, PostgresQueryBuilder, Query};

    fn listing() -> SelectStatement {
        Query::select()
            .column(Column::Id)
            .from(Column::Table)
            .and_where(Expr::col(Column::AccountId).eq("acct"))
            .to_owned()
    }

    fn render(statement: &SelectStatement) -> Result<String> {
        let (_, values) = statement.build(sea_query::SqliteQueryBuilder);
        check(statement)?;
        postgres(statement, &values)
    }

    #[test]
    fn what_means_the_same_renders_as_postgresql_renders_it() {
        let statement = listing()
            .and_where(
                Expr::col(Column::Attempt)
                    .lt(3)
                    .or(Expr::col(Column::Depth).is_null()),
            )
            .and_where(Expr::col(Column::Status).is_in(["queued", "waiting"]))
            .order_by(Column::CreatedAt, Order::Desc)
            .order_by(Column::Id, Order::Asc)
            .limit(20)
            .to_owned();
        // Both sort keys are NOT NULL: PostgreSQL's own order, so an index still serves it.
        assert_eq!(
            render(&statement).unwrap(),
            statement.build(PostgresQueryBuilder).0
        );
    }

    #[test]
    fn a_sort_key_that_may_be_null_keeps_sqlites_null_order_unless_it_says_its_own() {
        let sql = |order: Order, nulls: Option<NullOrdering>| {
            let mut s = listing();
            match nulls {
                Some(nulls) => s.order_by_with_nulls(Column::NotBefore, order, nulls),
                None => s.order_by(Column::NotBefore, order),
            };
            render(&s).unwrap()
        };
        assert!(sql(Order::Asc, None).ends_with(r#""not_before" ASC NULLS FIRST"#));
        assert!(sql(Order::Desc, None).ends_with(r#""not_before" DESC NULLS LAST"#));
        let own = sql(Order::Asc, Some(NullOrdering::Last));
        assert!(own.ends_with(r#""not_before" ASC NULLS LAST"#), "{own}");
        // SQLite's rendering is left as it is.
        let mut s = listing();
        s.order_by(Column::NotBefore, Order::Asc);
        assert!(s
            .to_string(sea_query::SqliteQueryBuilder)
            .ends_with(r#""not_before" ASC"#));
    }

    #[test]
    fn like_and_case_folding_fold_ascii_letters_only_with_the_same_parameters() {
        let s = listing()
            .and_where(Expr::col(Column::Title).like("Nightly%"))
            .and_where(Func::upper(Expr::col(Column::Model)).eq("GPT"))
            .to_owned();
        let sql = render(&s).unwrap();
        let fold = "'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'";
        assert!(
            sql.contains(&format!(
                r#"translate("title", {fold}) LIKE translate($2, {fold}) ESCAPE ''"#
            )),
            "{sql}"
        );
        assert!(
            sql.contains(
                r#"translate("model", 'abcdefghijklmnopqrstuvwxyz', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ') = $3"#
            ),
            "{sql}"
        );
        let own_escape = listing()
            .and_where(Expr::col(Column::Title).like(sea_query::LikeExpr::new("a!%").escape('!')))
            .to_owned();
        assert!(render(&own_escape).unwrap().ends_with(" ESCAPE '!'"));
    }

    #[test]
    fn what_the_backends_evaluate_differently_is_refused_naming_it() {
        let refused = |s: SelectStatement, what: &str| {
            let err = check(&s).unwrap_err().to_string();
            assert!(err.contains(what), "{what}: {err}");
        };
        refused(
            listing().and_where(Expr::cust("1 = 1")).to_owned(),
            "raw SQL `1 = 1`",
        );
        refused(
            listing()
                .and_where(Expr::col(Column::Attempt).mul(2).eq(4))
                .to_owned(),
            "the operator Mul",
        );
        refused(
            listing()
                .and_where(Expr::col(Column::Attempt).modulo(2).eq(0))
                .to_owned(),
            "the operator Mod",
        );
        refused(
            listing()
                .and_where(Expr::expr(Func::abs(Expr::col(Column::Attempt))).eq(1))
                .to_owned(),
            "the function Abs",
        );
        refused(
            listing()
                .and_where(Expr::col(Column::CreatedAt).lt(Expr::current_timestamp()))
                .to_owned(),
            "the keyword CurrentTimestamp",
        );
        refused(listing().lock(LockType::Update).to_owned(), "a row lock");
        refused(
            listing()
                .and_where(
                    Expr::col(Column::Id).in_subquery(
                        Query::select()
                            .column(Column::Id)
                            .from(Column::Table)
                            .and_where(Expr::cust("random() > 0"))
                            .to_owned(),
                    ),
                )
                .to_owned(),
            "raw SQL `random() > 0`",
        );
        // The same checks run on SQLite, so a listing that works there works on PostgreSQL.
        assert!(check(&listing()).is_ok());
    }
}
