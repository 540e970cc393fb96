commbench --fit --db $CASE_TMP/none.db
