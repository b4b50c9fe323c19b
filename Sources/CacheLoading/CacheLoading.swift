// CacheLoading module.
