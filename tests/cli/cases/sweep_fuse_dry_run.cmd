sweep $OPSCHED_SOURCE_DIR/tests/cli/data/sweep_fuse.yml --db /nonexistent/x.db --dry-run --backend cpu
