commbench --import $OPSCHED_SOURCE_DIR/tests/cli/data/sweep_bad_yaml.yml --db $CASE_TMP/c.db
