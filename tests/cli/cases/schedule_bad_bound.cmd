schedule googlenet --cost measure --bound 2
