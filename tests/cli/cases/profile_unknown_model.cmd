profile nosuchnet
