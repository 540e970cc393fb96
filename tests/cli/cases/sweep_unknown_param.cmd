sweep $OPSCHED_SOURCE_DIR/tests/cli/data/sweep_unknown_param.yml --db /nonexistent/x.db
