sweep --default --db /nonexistent/x.db --math fp8
