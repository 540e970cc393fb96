sweep $OPSCHED_SOURCE_DIR/tests/cli/data/sweep_bad_yaml.yml --db /nonexistent/x.db
