models
