run googlenet --schedule /nonexistent/s.json --backend cpu
