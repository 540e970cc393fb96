export json --db /nonexistent/x.db
