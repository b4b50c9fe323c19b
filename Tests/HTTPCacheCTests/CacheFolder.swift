import Foundation
@testable import HTTPCacheC
import XCTest

/// A cache folder of a test's own, opened through the C API.
struct CacheFolder {
    let path: String

    init(_ name: String) { path = NSTemporaryDirectory() + "hc-capi-\(name)-\(UUID().uuidString)" }

    /// hc_open on the folder (created by it).
    func open() throws -> OpaquePointer {
        let config = hc_config_new()!
        defer { hc_config_free(config) }
        XCTAssertEqual(hc_config_set(config, "cache-dir", path), 0)
        var cache: OpaquePointer?
        XCTAssertEqual(hc_open(config, &cache), 0)
        return try XCTUnwrap(cache)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}
