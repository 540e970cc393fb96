export --format json --db /nonexistent/x.db
