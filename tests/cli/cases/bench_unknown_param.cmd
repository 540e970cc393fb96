bench conv2d --in-chanels 3
