// hc_cache_*: the cache operations, each one call of MediaCache.
import HTTPCache

/// hc_list_fn of include/httpcache.h.
public typealias HCListFunction = @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, Int64, Int64, Int32) -> Void

@c public func hc_cache_size(_ cache: OpaquePointer?) -> Int64 {
    guard let handle = CacheHandle.from(cache) else { return Int64(hcInvalid) }
    return handle.cache.cacheSize()
}

@c public func hc_cache_remove(_ cache: OpaquePointer?, _ url: UnsafePointer<CChar>?) -> Int32 {
    guard let handle = CacheHandle.from(cache), let url else { return hcInvalid }
    return cResult { () throws(HTTPCacheError) in try handle.cache.removeResource(for: String(cString: url)) }
}

@c public func hc_cache_clear(_ cache: OpaquePointer?) -> Int32 {
    guard let handle = CacheHandle.from(cache) else { return hcInvalid }
    handle.cache.removeAllResources()
    return hcOK
}

@c public func hc_cache_export(_ cache: OpaquePointer?, _ url: UnsafePointer<CChar>?,
                               _ path: UnsafePointer<CChar>?) -> Int32 {
    guard let handle = CacheHandle.from(cache), let url, let path else { return hcInvalid }
    let operations = handle.cache.operations  // the blocking form of exportResource
    return cResult { () throws(HTTPCacheError) in
        try operations.wait { operations.export(url: String(cString: url), to: String(cString: path), $0) }.get()
    }
}

@c public func hc_cache_import(_ cache: OpaquePointer?, _ url: UnsafePointer<CChar>?,
                               _ path: UnsafePointer<CChar>?) -> Int32 {
    guard let handle = CacheHandle.from(cache), let url, let path else { return hcInvalid }
    let operations = handle.cache.operations  // the blocking form of importResource
    return cResult { () throws(HTTPCacheError) in
        try operations.wait { operations.importFile(String(cString: path), url: String(cString: url), contentType: nil, $0) }.get()
    }
}

@c public func hc_cache_list(_ cache: OpaquePointer?, _ function: HCListFunction?,
                             _ userdata: UnsafeMutableRawPointer?) -> Int32 {
    guard let handle = CacheHandle.from(cache), let function else { return hcInvalid }
    // A snapshot: the callback runs with no lock held, so it may call hc_cache_remove on this cache.
    for resource in handle.cache.cachedResources() {
        resource.url.withCString { url in
            function(userdata, url, resource.cachedBytes, resource.totalLength ?? -1, resource.isComplete ? 1 : 0)
        }
    }
    return hcOK
}

@c public func hc_rekey(_ cacheDirectory: UnsafePointer<CChar>?, _ oldKeyFile: UnsafePointer<CChar>?,
                        _ newKeyFile: UnsafePointer<CChar>?) -> Int32 {
    guard let cacheDirectory, let oldKeyFile, let newKeyFile else { return hcInvalid }
    return cResult { () throws(HTTPCacheError) in
        let old = try HTTPCacheConfiguration.encryptionKey(fromFile: String(cString: oldKeyFile))
        let new = try HTTPCacheConfiguration.encryptionKey(fromFile: String(cString: newKeyFile))
        try MediaCache.rekey(cacheDirectory: String(cString: cacheDirectory), oldKey: old, newKey: new)
    }
}
