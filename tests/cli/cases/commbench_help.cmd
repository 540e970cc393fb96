commbench --help
