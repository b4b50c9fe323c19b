// The library's version. It must match HC_VERSION_* in include/httpcache.h
// (scripts/install.sh names the .so from the header and examples/c/version.c
// compares the two at run time).

enum LibraryVersion {
    static let major: Int32 = 0
    static let minor: Int32 = 2
    static let patch: Int32 = 0
    /// Static and NUL-terminated: hc_version hands out its address.
    static let text: StaticString = "0.2.0"
}

@c public func hc_version_number() -> Int32 {
    LibraryVersion.major * 10000 + LibraryVersion.minor * 100 + LibraryVersion.patch
}

@c public func hc_version() -> UnsafePointer<CChar> {
    LibraryVersion.text.cString
}

extension StaticString {
    /// The literal's bytes as a C string: Swift emits string literals with a
    /// trailing NUL in read-only data, so the pointer is valid forever.
    var cString: UnsafePointer<CChar> {
        UnsafeRawPointer(utf8Start).assumingMemoryBound(to: CChar.self)
    }
}
