#!/usr/bin/env bash
# The domain test suite with every store on PostgreSQL (SEED_AGENTS_TEST_BACKEND=postgres), on
# the server SEED_AGENTS_TEST_POSTGRES names; run it under scripts/with-postgres.sh for a
# throwaway one:
#
#   SEED_AGENTS_TEST_BACKEND=postgres scripts/with-postgres.sh scripts/test-postgres.sh
#
# These files open their stores through tests/backend, so the same tests run on both backends;
# a test that reads SQLite's own internals (query plans, raw rows) says it was skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
export SEED_AGENTS_TEST_BACKEND=postgres
suites=(
  conversation_accounts conversation_agents conversation_deletion conversation_events
  conversation_idempotency
  execution_fencing execution_journal execution_node_races execution_plans execution_races
  execution_runs
  execution_triggers execution_ts_waits execution_waits
  maintenance_prune audit_chain audit_events account_isolation
  tools_continuations tools_documents tools_drafts tools_mcp
  async_store example_server feed
)
args=()
for s in "${suites[@]}"; do args+=(--test "$s"); done
cargo test --all-features "$@" "${args[@]}"
