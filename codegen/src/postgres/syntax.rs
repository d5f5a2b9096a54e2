//! The build's check of the PostgreSQL side without a server: every statement of the plan
//! parses in PostgreSQL's dialect (sqlparser's), so a rendering bug or a typo in a dialect file
//! fails the build, not a deployment. Whether the statements do what the model says is proved
//! against a real server by the store's tests.

use super::plan::{Plan, Source};
use crate::error::{Error, Result};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

/// Parses every statement of `plan` as PostgreSQL.
///
/// # Errors
/// [`Error::Postgres`] naming the step (and its dialect file) and the statement that does not
/// parse.
pub fn check_syntax(plan: &Plan) -> Result<()> {
    let fresh = plan
        .fresh
        .iter()
        .map(|s| ("the fresh schema".to_string(), s));
    let steps = plan.steps.iter().flat_map(|step| {
        let what = match &step.source {
            Source::Dialect(path) => path.display().to_string(),
            _ => format!("the derived step to version {}", step.version),
        };
        step.statements.iter().map(move |s| (what.clone(), s))
    });
    for (what, statement) in fresh.chain(steps) {
        Parser::parse_sql(&PostgreSqlDialect {}, statement).map_err(|e| Error::Postgres {
            message: format!(
                "{what}: PostgreSQL would not parse this statement ({e}):\n    {statement}"
            ),
        })?;
    }
    Ok(())
}
