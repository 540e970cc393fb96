sweep $OPSCHED_SOURCE_DIR/tests/cli/data/sweep_filter_div_overflow.yml --dry-run
