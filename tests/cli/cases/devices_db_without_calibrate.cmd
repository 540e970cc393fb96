devices --db x.db
