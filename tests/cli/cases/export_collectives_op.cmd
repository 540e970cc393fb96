export --db $CASE_TMP/a.db --collectives --op conv2d
