sweep $OPSCHED_SOURCE_DIR/tests/cli/data/sweep_fuse_not_conv.yml --db /nonexistent/x.db
