schedule googlenet --db /nonexistent/x.db
