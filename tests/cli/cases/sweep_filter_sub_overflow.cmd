sweep $OPSCHED_SOURCE_DIR/tests/cli/data/sweep_filter_sub_overflow.yml --dry-run
