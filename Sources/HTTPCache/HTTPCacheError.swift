import CacheIO

/// An error from HTTPCache: a stable code and a readable message (see `CacheIO.HTTPCacheError`).
public typealias HTTPCacheError = CacheIO.HTTPCacheError
