sweep $OPSCHED_SOURCE_DIR/tests/cli/data/sweep_filter_add_overflow.yml --dry-run
