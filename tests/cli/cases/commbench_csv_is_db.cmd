commbench --db $CASE_TMP/a.db --csv $CASE_TMP/./a.db
