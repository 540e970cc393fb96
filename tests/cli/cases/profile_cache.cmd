profile squeezenet1_1 --cache cold
