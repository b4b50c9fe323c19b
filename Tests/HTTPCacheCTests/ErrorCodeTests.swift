import CacheHTTP
import CacheLoading
import CacheUpstream
import HTTPCache
import XCTest

/// Load failures get one code, whether a reader or a preload meets them.
final class ErrorCodeTests: XCTestCase {
    func testLoadFailuresHaveOneCode() {
        let table: [(LoadError, HTTPCacheError.Code)] = [
            (.notCached("stale"), .notFound),  // was .timedOut
            (.originStatus(status: 404, headers: HTTPHeaders(), body: []), .notFound),
            (.originStatus(status: 503, headers: HTTPHeaders(), body: []), .upstream),
            (.upstream(.timeout("read")), .timedOut),
            (.upstream(.tls("expired")), .tls),
            (.upstream(.configuration("ca")), .invalidArgument),
            (.upstream(.connect("refused")), .upstream),
            (.storage("disk full"), .io),
            (.decryption("key"), .invalidArgument),
            (.mismatch("range"), .upstream),
        ]
        for (error, code) in table {
            XCTAssertEqual(HTTPCacheError(error).code, code, "\(error)")
            guard case .fetch(_, let preloadCode, _) = PreloadFailure(url: "u", error) else { return XCTFail() }
            XCTAssertEqual(preloadCode, code.rawValue, "a preload's code for \(error)")
        }
    }
}
