sweep $OPSCHED_SOURCE_DIR/tests/cli/data/sweep_bad_value.yml --db /nonexistent/x.db
