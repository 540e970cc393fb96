sweep /nonexistent/spec.yml --db /nonexistent/x.db
