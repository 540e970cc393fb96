sweep $OPSCHED_SOURCE_DIR/tests/cli/data/sweep_unknown_network.yml --db /nonexistent/x.db
