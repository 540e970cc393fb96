commbench --min-bytes 1M --max-bytes 4K
