sweep $OPSCHED_SOURCE_DIR/tests/cli/data/sweep_alias_bomb.yml --dry-run
