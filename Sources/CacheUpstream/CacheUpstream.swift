// CacheUpstream module.
