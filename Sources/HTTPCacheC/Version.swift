import CacheUpstream

// The library's version is `HTTPCacheVersion` (also the origin's User-Agent).
// It must match HC_VERSION_* in include/httpcache.h (scripts/install.sh names
// the .so from the header and examples/c/version.c compares the two at run time).

@c public func hc_version_number() -> Int32 {
    HTTPCacheVersion.major * 10000 + HTTPCacheVersion.minor * 100 + HTTPCacheVersion.patch
}

@c public func hc_version() -> UnsafePointer<CChar> {
    HTTPCacheVersion.text.cString
}

extension StaticString {
    /// The literal's bytes as a C string: Swift emits string literals with a
    /// trailing NUL in read-only data, so the pointer is valid forever.
    var cString: UnsafePointer<CChar> {
        UnsafeRawPointer(utf8Start).assumingMemoryBound(to: CChar.self)
    }
}
