// CacheProxy module.
