import CacheHTTP
import CacheUpstream
import XCTest

final class RedirectsTests: XCTestCase {
    private let base = OriginURL.parse("http://a.example/media/x/clip.mp4?sig=1")!

    func testOnlyTheFiveRedirectStatusesAreFollowed() {
        XCTAssertEqual([300, 301, 302, 303, 304, 305, 306, 307, 308, 309].filter(Redirects.isRedirect),
                       [301, 302, 303, 307, 308])
    }

    func testTargetsResolveAgainstTheCurrentURL() throws {
        func target(_ location: String) throws -> String {
            try Redirects.target(of: location, from: base, chain: [base.string], hops: 0, limit: 10).get().string
        }
        XCTAssertEqual(try target("https://cdn.example:8443/v?t=2"), "https://cdn.example:8443/v?t=2")
        XCTAssertEqual(try target("//cdn.example/v"), "http://cdn.example/v")
        XCTAssertEqual(try target("/other/clip.mp4"), "http://a.example/other/clip.mp4")
        XCTAssertEqual(try target("../y/clip.mp4"), "http://a.example/media/y/clip.mp4")
        XCTAssertEqual(try target("clip2.mp4#t=10"), "http://a.example/media/x/clip2.mp4")
    }

    func testLoopsHopLimitsAndUnusableLocationsAreRefused() {
        let chain = ["http://a.example/1", "http://a.example/2"]
        let from = OriginURL.parse(chain[1])!
        XCTAssertThrowsError(try Redirects.target(of: "/1", from: from, chain: chain, hops: 1, limit: 10).get()) {
            XCTAssertTrue("\($0)".contains("redirect loop: http://a.example/1 → http://a.example/2 → http://a.example/1"), "\($0)")
        }
        XCTAssertThrowsError(try Redirects.target(of: "/3", from: from, chain: chain, hops: 10, limit: 10).get()) {
            XCTAssertTrue("\($0)".contains("more than 10 redirects"), "\($0)")
        }
        XCTAssertNoThrow(try Redirects.target(of: "/3", from: from, chain: chain, hops: 9, limit: 10).get())
        XCTAssertThrowsError(try Redirects.target(of: "ftp://a.example/f", from: from, chain: chain, hops: 0, limit: 10).get())
    }

    func testMemoryIsBoundedOldestFirst() {
        var memory = RedirectMemory(capacity: 2)
        let urls = (0..<3).map { OriginURL.parse("http://a.example/\($0)")! }
        let target = OriginURL.parse("https://cdn.example/t")!
        for url in urls { memory.remember(url, target: target) }
        XCTAssertNil(memory.target(for: urls[0]))
        XCTAssertEqual(memory.target(for: urls[1]), target)
        XCTAssertEqual(memory.target(for: urls[2]), target)
        memory.forget(urls[2])
        XCTAssertNil(memory.target(for: urls[2]))
    }
}
