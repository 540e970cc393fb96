sweep $OPSCHED_SOURCE_DIR/tests/cli/data/sweep_small.yml --dry-run --backend cpu
