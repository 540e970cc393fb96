export csv --db /nonexistent/x.db
