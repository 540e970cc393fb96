commbench --fit --db $CASE_TMP/c.db --inter-node-gbps 400
