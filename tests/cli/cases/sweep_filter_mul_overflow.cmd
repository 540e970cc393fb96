sweep $OPSCHED_SOURCE_DIR/tests/cli/data/sweep_filter_mul_overflow.yml --dry-run
