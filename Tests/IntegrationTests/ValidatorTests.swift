import Foundation
import HTTPCache
import XCTest

/// A resource that changes at the origin: new bytes are served, versions never mix.
final class ValidatorTests: XCTestCase {
    /// Rewrites a file at the origin with other bytes and a later mtime (nginx's ETag changes).
    private func change(_ fixture: ProxyFixture, _ name: String, size: Int, seed: UInt64) throws -> TestFile {
        let file = try fixture.file(name, size: size, seed: seed)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(60)], ofItemAtPath: file.path)
        return try TestFile.existing(at: file.url)
    }

    func testGapFetchAfterAChangeNeverMixesVersions() throws {
        let fixture = try ProxyFixture()
        defer { fixture.stop() }
        let v1 = try fixture.file("v.bin", size: 400_000, seed: 1)
        XCTAssertBytes(try fixture.get("v.bin", range: "bytes=0-99999").body, equal: v1, range: 0..<100_000)
        let v2 = try change(fixture, "v.bin", size: 400_000, seed: 2)
        fixture.origin.clearAccessLog()

        // Cached v1 bytes first, then a gap: the gap fetch carries If-Range,
        // the origin answers with v2 whole, and this response ends early.
        let mixed = try? fixture.get("v.bin", range: "bytes=0-199999")
        if let mixed {
            XCTAssertFalse(mixed.status == 206 && mixed.body.count == 200_000, "a complete response after a change")
            XCTAssertTrue(v1.matches(mixed.body, at: 0) || v2.matches(mixed.body, at: 0), "bytes of two versions")
        }
        let gap = fixture.origin.accessLog(waitingFor: 1).first { $0.range == "bytes=100000-199999" }
        XCTAssertNotNil(gap?.ifRange, "gap fetches carry If-Range")
        // From now on, v2 only.
        let after = try fixture.get("v.bin")
        XCTAssertBytes(after.body, equal: v2)
        XCTAssertBytes(try fixture.get("v.bin", range: "bytes=0-99999").body, equal: v2, range: 0..<100_000)
    }

    func testChangedLengthIsDetected() throws {
        let fixture = try ProxyFixture()
        defer { fixture.stop() }
        let v1 = try fixture.file("l.bin", size: 300_000, seed: 1)
        XCTAssertBytes(try fixture.get("l.bin", range: "bytes=0-999").body, equal: v1, range: 0..<1000)
        let v2 = try change(fixture, "l.bin", size: 500_000, seed: 3)
        _ = try? fixture.get("l.bin", range: "bytes=200000-")
        let whole = try fixture.get("l.bin")
        XCTAssertEqual(whole.header("Content-Length"), "500000")
        XCTAssertBytes(whole.body, equal: v2)
    }

    func testRevalidationServesTheNewVersionOfACompleteResource() throws {
        let fixture = try ProxyFixture { $0.revalidateAfter = 0 }
        defer { fixture.stop() }
        let v1 = try fixture.file("r.bin", size: 200_000, seed: 1)
        XCTAssertBytes(try fixture.get("r.bin").body, equal: v1)
        XCTAssertBytes(try fixture.get("r.bin").body, equal: v1)
        let v2 = try change(fixture, "r.bin", size: 200_000, seed: 5)
        let response = try fixture.get("r.bin")
        XCTAssertEqual(response.status, 200)
        XCTAssertBytes(response.body, equal: v2)
        XCTAssertEqual(response.header("ETag"), fixture.origin.accessLog().isEmpty ? nil : response.header("ETag"))
    }
}
