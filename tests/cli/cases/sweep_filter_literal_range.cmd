sweep $OPSCHED_SOURCE_DIR/tests/cli/data/sweep_filter_literal_range.yml --dry-run
