import CacheUpstream

// `HTTPCacheVersion` must match HC_VERSION_* in include/httpcache.h (scripts/install.sh names the .so
// from the header; examples/c/version.c compares the two at run time).

@c public func hc_version_number() -> Int32 {
    HTTPCacheVersion.major * 10000 + HTTPCacheVersion.minor * 100 + HTTPCacheVersion.patch
}

@c public func hc_version() -> UnsafePointer<CChar> {
    HTTPCacheVersion.text.cString
}

extension StaticString {
    /// Swift emits string literals with a trailing NUL in read-only data: valid forever.
    var cString: UnsafePointer<CChar> {
        UnsafeRawPointer(utf8Start).assumingMemoryBound(to: CChar.self)
    }
}
