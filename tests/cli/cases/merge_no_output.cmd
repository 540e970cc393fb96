merge /nonexistent/a.db
