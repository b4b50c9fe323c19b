// CacheIO module.
