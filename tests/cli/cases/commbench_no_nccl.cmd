commbench --max-bytes 64
