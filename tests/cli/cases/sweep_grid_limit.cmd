sweep $OPSCHED_SOURCE_DIR/tests/cli/data/sweep_grid_limit.yml --dry-run
