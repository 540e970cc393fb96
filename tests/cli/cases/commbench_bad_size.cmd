commbench --max-bytes 3Q
