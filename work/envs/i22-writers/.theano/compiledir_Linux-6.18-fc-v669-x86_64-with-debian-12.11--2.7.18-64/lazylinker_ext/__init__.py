_version = 0.211
