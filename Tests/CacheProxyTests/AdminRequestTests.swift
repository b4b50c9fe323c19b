import CacheHTTP
import CacheIO
import CacheLoading
import XCTest

@testable import CacheProxy

/// The admin requests are one closed set: what the CLI encodes, the routes
/// decode to the same request, and nothing else is taken for one of them.
final class AdminRequestTests: XCTestCase {
    private func roundTrip(_ request: AdminRequest, file: StaticString = #filePath, line: UInt = #line) {
        let (method, path, query) = request.wire
        // As on the wire: the query encoded by the client and parsed by the routes.
        let encoded = query.map { "\($0.key)=\(percentEncoded($0.value))" }.joined(separator: "&")
        let parsed = QueryString.parse(Substring(encoded))
        XCTAssertEqual(parsed, query, file: file, line: line)
        switch AdminRequest.decode(method: method, path: Substring(path), query: parsed) {
        case .success(let decoded)?: XCTAssertEqual(decoded, request, file: file, line: line)
        case .failure(let error)?: XCTFail("\(request) refused: \(error)", file: file, line: line)
        case nil: XCTFail("\(request) not recognised", file: file, line: line)
        }
    }

    private func percentEncoded(_ text: String) -> String {
        text.utf8.map { byte in
            let c = Character(UnicodeScalar(byte))
            return c.isLetter && byte < 128 || c.isNumber && byte < 128 ? String(c) : "%" + String(byte, radix: 16, uppercase: true).leftPadded
        }.joined()
    }

    func testEveryRequestDecodesToItself() {
        let url = "http://127.0.0.1:8080/a%20b/%C3%BC;p?x=1&y=2+3"
        var preload = PreloadRequest(url: url, range: 10..<21, variants: .one(.closest(toBandwidth: 800_000)), duration: 12.5,
                                     pin: true, language: "en")
        let requests: [AdminRequest] = [
            .list, .clear, .remove(url: url), .export(url: url, path: "/tmp/x y"),
            .importFile(url: url, path: "/tmp/f", contentType: nil), .importFile(url: url, path: "/tmp/f", contentType: "video/mp4"),
            .unpin(url: url), .purge(.url(url)), .purge(.prefix("http://127.0.0.1:8080/")), .purge(.download("d1")),
            .preload(preload), .preloadStatus(id: 7), .preloadCancel(id: 7),
        ]
        for request in requests { roundTrip(request) }
        for variants: PreloadVariants in [.all, .one(.highest), .one(.lowest)] {
            preload = PreloadRequest(url: url, variants: variants)
            roundTrip(.preload(preload))
        }
    }

    func testMissingArgumentsAreErrorsAndOtherRoutesAreNotOurs() {
        func decode(_ method: String, _ path: String, _ query: [String: String] = [:]) -> Result<AdminRequest, HTTPCacheError>? {
            AdminRequest.decode(method: method, path: Substring(path), query: query)
        }
        for (method, path) in [("POST", "/admin/cache/remove"), ("POST", "/admin/cache/export"), ("POST", "/admin/cache/unpin"),
                               ("POST", "/admin/cache/purge"), ("POST", "/admin/preload"), ("GET", "/admin/preload"),
                               ("POST", "/admin/preload/cancel")] {
            guard case .failure(let error)? = decode(method, path) else { return XCTFail("\(method) \(path) without arguments") }
            XCTAssertEqual(error.code, .invalidArgument)
        }
        // An empty prefix would purge everything: refused, not read as a prefix.
        guard case .failure? = decode("POST", "/admin/cache/purge", ["prefix": ""]) else { return XCTFail("empty prefix") }
        guard case .failure? = decode("POST", "/admin/preload", ["url": "ftp://127.0.0.1/x"]) else { return XCTFail("ftp") }
        guard case .failure? = decode("POST", "/admin/preload", ["url": "http://127.0.0.1/x", "duration": "-1"]) else {
            return XCTFail("negative duration")
        }
        // Wrong method, unknown action, download routes: not this set's.
        XCTAssertNil(decode("GET", "/admin/cache/clear"))
        XCTAssertNil(decode("POST", "/admin/cache"))
        XCTAssertNil(decode("POST", "/admin/cache/frobnicate", ["url": "x"]))
        XCTAssertNil(decode("POST", "/admin/downloads/add", ["url": "x"]))
    }
}

private extension String {
    var leftPadded: String { count == 1 ? "0" + self : self }
}
