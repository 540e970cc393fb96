models --format csv
