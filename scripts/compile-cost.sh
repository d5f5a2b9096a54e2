#!/usr/bin/env bash
# Compile cost of the checked-SQL macros: two generated crates with the same 200 statements, one
# through `query!`, one through plain rusqlite. Dependencies are built once; each crate's own
# rebuild (after touching its source) is timed nine times and the median reported. A
# CARGO_TARGET_DIR already set is used (the dependencies are then shared with other builds).
# OPT_LEVEL (default 0, Cargo's own default) is the build-override opt-level: what the proc
# macros and the SQLite they prepare statements with are built at.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$root/target/compile-cost"
n="${1:-200}"
opt="${OPT_LEVEL:-0}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$work/target-O$opt}"
rm -rf "$work/checked" "$work/plain"

for kind in checked plain; do
  mkdir -p "$work/$kind/src"
  cat > "$work/$kind/Cargo.toml" <<TOML
[package]
name = "compile-cost-$kind"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
seed-agents-store = { path = "$root" }
rusqlite = "0.43"

[workspace]

[profile.dev.build-override]
opt-level = $opt
TOML
  {
    echo "#![allow(dead_code, clippy::all)]"
    echo "use rusqlite::{Connection, OptionalExtension};"
    for i in $(seq 1 "$n"); do
      sql="SELECT id, status, title, attempt FROM runs WHERE account_id = ?1 AND session_id = ?2 AND attempt > $i"
      if [ "$kind" = checked ]; then
        echo "pub fn q$i(c: &Connection, a: &str, s: &str) -> seed_agents_store::Result<Option<(String, seed_agents_store::schema::runs::Status, Option<String>, i64)>> {"
        echo "    Ok(seed_agents_store::query!(\"$sql\", a, s).fetch_optional(c)?.map(|r| (r.id, r.status, r.title, r.attempt)))"
        echo "}"
      else
        echo "pub fn q$i(c: &Connection, a: &str, s: &str) -> rusqlite::Result<Option<(String, String, Option<String>, i64)>> {"
        echo "    c.prepare_cached(\"$sql\")?.query_row((a, s), |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))).optional()"
        echo "}"
      fi
    done
  } > "$work/$kind/src/lib.rs"
done

measure() {
  local kind=$1
  (cd "$work/$kind" && cargo build --quiet 2>/dev/null) # dependencies and a first build
  local times=()
  for _ in 1 2 3 4 5 6 7 8 9; do
    touch "$work/$kind/src/lib.rs"
    local start end
    start=$(date +%s.%N)
    (cd "$work/$kind" && cargo build --quiet)
    end=$(date +%s.%N)
    times+=("$(echo "$end - $start" | bc)")
  done
  printf '%s\n' "${times[@]}" | sort -n | sed -n 5p
}

checked=$(measure checked)
plain=$(measure plain)
ratio=$(echo "scale=2; $checked / $plain" | bc)
echo "statements: $n, build-override opt-level $opt"
echo "query! crate build:        ${checked}s (median of 9)"
echo "plain rusqlite crate build: ${plain}s (median of 9)"
echo "ratio: $ratio"
