run squeezenet1_1 --compare sequential --ablate depthwise,bogus
