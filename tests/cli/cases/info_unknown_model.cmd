info nosuchnet
