commbench --fit --db $CASE_TMP/x.db --gpus 2
