sweep $OPSCHED_SOURCE_DIR/tests/cli/data/sweep_alias_grids.yml --dry-run
