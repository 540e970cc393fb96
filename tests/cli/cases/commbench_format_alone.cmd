commbench --format json
