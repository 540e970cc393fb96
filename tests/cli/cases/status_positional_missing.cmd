status /nonexistent/x.db
