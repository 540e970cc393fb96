run squeezenet1_1 --backend cpu --compare sequential --min-ms 5 --warmup 1 --format csv
