merge /nonexistent/a.db -o /nonexistent/all.db
