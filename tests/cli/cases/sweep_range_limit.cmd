sweep $OPSCHED_SOURCE_DIR/tests/cli/data/sweep_range_limit.yml --dry-run
