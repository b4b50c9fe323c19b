// CacheStorage module.
