profile squeezenet1_1 --backend cpu --ablate depthwise,epilogue,engines --dry-run
