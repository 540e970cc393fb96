sweep $OPSCHED_SOURCE_DIR/tests/cli/data/sweep_small.yml --dry-run --shard 1/2 --backend cpu
