status --db /nonexistent/x.db
