sweep --default --db /nonexistent/x.db --gpus 0,x
