sweep $OPSCHED_SOURCE_DIR/tests/cli/data/sweep_bad_filter.yml --db /nonexistent/x.db
