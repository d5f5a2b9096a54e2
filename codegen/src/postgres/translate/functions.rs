//! SQLite's scalar functions as the PostgreSQL expressions that mean the same: renamed where
//! only the name differs, rewritten where PostgreSQL's namesake means something else (scalar
//! `max`/`min` skip NULLs there, `lower`/`upper` fold every letter).

use sqlparser::ast::{
    BinaryOperator, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, Ident,
    ObjectName, ObjectNamePart, Value,
};

/// SQLite's scalar functions as PostgreSQL's (the caller has made the arguments values); the
/// expression to put in the call's place, when renaming it is not enough.
pub(super) fn function(f: &mut Function) -> Option<Expr> {
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    let name = f.name.to_string().to_ascii_lowercase();
    let args = || {
        list.args.iter().filter_map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
            _ => None,
        })
    };
    let renamed = match (name.as_str(), list.args.len()) {
        ("max" | "min", n) if n > 1 => {
            // NULL when any argument is, as SQLite's; GREATEST and LEAST skip NULLs.
            let any_null =
                args()
                    .map(|e| Expr::IsNull(Box::new(e)))
                    .reduce(|a, b| Expr::BinaryOp {
                        left: Box::new(a),
                        op: BinaryOperator::Or,
                        right: Box::new(b),
                    })?;
            let name = if name == "max" { "GREATEST" } else { "LEAST" };
            return Some(Expr::Case {
                case_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
                end_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
                operand: None,
                conditions: vec![sqlparser::ast::CaseWhen {
                    condition: any_null,
                    result: Expr::value(Value::Null),
                }],
                else_result: Some(Box::new(call(name, args().collect()))),
            });
        }
        ("lower" | "upper", 1) => return args().next().map(|e| ascii_case(e, name == "lower")),
        ("ifnull", _) => "COALESCE",
        _ => return None,
    };
    f.name = ObjectName(vec![ObjectNamePart::Identifier(Ident::new(renamed))]);
    None
}

/// `e` with its ASCII letters folded to lower (or upper) case and no other character changed:
/// what SQLite's `lower`, `upper` and `LIKE` do, where PostgreSQL's fold every letter.
pub(super) fn ascii_case(e: Expr, lower: bool) -> Expr {
    const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    const LOWER: &str = "abcdefghijklmnopqrstuvwxyz";
    let (from, to) = if lower {
        (UPPER, LOWER)
    } else {
        (LOWER, UPPER)
    };
    let text = |s: &str| Expr::value(Value::SingleQuotedString(s.into()));
    call("translate", vec![e, text(from), text(to)])
}

/// A call of `name` with `args`.
pub(super) fn call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function(Function {
        name: ObjectName(vec![ObjectNamePart::Identifier(Ident::new(name))]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(sqlparser::ast::FunctionArgumentList {
            duplicate_treatment: None,
            args: args
                .into_iter()
                .map(|e| FunctionArg::Unnamed(FunctionArgExpr::Expr(e)))
                .collect(),
            clauses: Vec::new(),
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    })
}
