status a.db --db b.db
