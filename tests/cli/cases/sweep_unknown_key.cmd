sweep $OPSCHED_SOURCE_DIR/tests/cli/data/sweep_unknown_key.yml --db /nonexistent/x.db
