import Foundation
import HTTPCache
import XCTest

/// One owner per cache folder within a process too, and close() gives the
/// folder up at once (what hc_open's HC_EBUSY and hc_close rely on).
final class MediaCacheLockTests: XCTestCase {
    func testSameFolderTwiceInOneProcessIsBusy() throws {
        let folder = try TemporaryDirectory(prefix: "hc-lock")
        defer { folder.remove() }
        let first = try MediaCache(configuration: .init(cacheDirectory: folder.path))
        defer { first.close() }
        XCTAssertThrowsError(try MediaCache(configuration: .init(cacheDirectory: folder.path + "/"))) { error in
            let error = error as? HTTPCacheError
            XCTAssertEqual(error?.code, .busy)
            XCTAssertTrue(error?.message.contains("already open in this process") ?? false, "\(String(describing: error))")
        }
    }

    func testCloseUnlocksWhileTheObjectLives() throws {
        let folder = try TemporaryDirectory(prefix: "hc-lock")
        defer { folder.remove() }
        let first = try MediaCache(configuration: .init(cacheDirectory: folder.path))
        first.close()
        // `first` is still referenced here: the lock must not wait for deinit.
        let second = try MediaCache(configuration: .init(cacheDirectory: folder.path))
        second.close()
        withExtendedLifetime(first) {}
    }

    func testProxyURLBeforeServeAndAfterClose() throws {
        let folder = try TemporaryDirectory(prefix: "hc-lock")
        defer { folder.remove() }
        let cache = try MediaCache(configuration: .init(cacheDirectory: folder.path))
        XCTAssertThrowsError(try cache.proxyURL(for: "http://example.com/a.mp4")) {
            XCTAssertEqual(($0 as? HTTPCacheError)?.code, .invalidArgument)
        }
        try cache.serve()
        XCTAssertNoThrow(try cache.proxyURL(for: "http://example.com/a.mp4"))
        cache.close()
        XCTAssertThrowsError(try cache.proxyURL(for: "http://example.com/a.mp4")) {
            XCTAssertEqual(($0 as? HTTPCacheError)?.code, .closed)
        }
    }
}
