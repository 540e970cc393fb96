profile squeezenet1_1 --backend cpu --algo bogus --out-dir /tmp/opsched_cli_profile
