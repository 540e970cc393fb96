commbench --import $OPSCHED_SOURCE_DIR/tests/cli/data/nccl_tests_allgather.log --db $CASE_TMP/c.db
