#!/usr/bin/env bash
# The domain test suite with every store on PostgreSQL (SEED_AGENTS_TEST_BACKEND=postgres), on
# the server SEED_AGENTS_TEST_POSTGRES names; run it under scripts/with-postgres.sh for a
# throwaway one:
#
#   SEED_AGENTS_TEST_BACKEND=postgres scripts/with-postgres.sh scripts/test-postgres.sh
#
# These tests open their stores through support::backend, so the same tests run on both backends;
# a test that reads SQLite's own internals (query plans, raw rows) says it was skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
export SEED_AGENTS_TEST_BACKEND=postgres
# The domain families run whole, but for the parts that test SQLite itself or one process's
# key material (secret keys, the audit chain's races between processes on one file).
# `--workspace` gives the same features as the README's test command, so what that command
# built is reused rather than built again with the root package's features alone.
cargo test --workspace --all-features "$@" --test execution --test tools --test handle
cargo test --workspace --all-features "$@" --test conversation -- --skip keys::
cargo test --workspace --all-features "$@" --test maintenance -- --skip audit_races::
