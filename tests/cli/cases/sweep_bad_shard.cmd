sweep --default --dry-run --shard 2/2
