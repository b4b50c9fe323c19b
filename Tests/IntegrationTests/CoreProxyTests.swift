import Foundation
import XCTest

/// The play-while-download core against a real nginx origin.
final class CoreProxyTests: XCTestCase {
    var fixture: ProxyFixture!

    override func setUpWithError() throws {
        fixture = try ProxyFixture()
    }

    override func tearDown() {
        fixture?.stop()
        fixture = nil
    }

    func testWholeFileColdThenWarm() throws {
        let file = try fixture.file("movie.bin", size: 3_000_000)
        let cold = try fixture.get("movie.bin")
        XCTAssertEqual(cold.status, 200)
        XCTAssertEqual(cold.header("Content-Length"), "3000000")
        XCTAssertEqual(cold.header("Accept-Ranges"), "bytes")
        XCTAssertBytes(cold.body, equal: file)
        let warm = try fixture.get("movie.bin")
        XCTAssertBytes(warm.body, equal: file)
        let log = fixture.origin.accessLog(waitingFor: 1)
        XCTAssertEqual(log.count, 1, "the warm read must not reach the origin: \(log)")
        XCTAssertEqual(log.first?.bodyBytes, 3_000_000)
    }

    func testRandomRangesColdAndWarmAreByteExact() throws {
        let size = 2_000_000
        let file = try fixture.file("ranges.bin", size: size, seed: 7)
        var generator = SplitMix(seed: 42)
        var specs: [(String, Range<Int>)] = []
        for index in 0..<200 {
            let a = Int(generator.next() % UInt64(size))
            switch index % 3 {
            case 0:
                let b = min(size - 1, a + Int(generator.next() % 300_000))
                specs.append(("bytes=\(a)-\(b)", a..<(b + 1)))
            case 1:
                specs.append(("bytes=\(a)-", a..<size))
            default:
                let n = 1 + Int(generator.next() % 200_000)
                specs.append(("bytes=-\(n)", max(0, size - n)..<size))
            }
        }
        let connection = try fixture.connect()
        let path = try fixture.proxyPath("ranges.bin")
        for pass in ["cold", "warm"] {
            for (header, expected) in specs {
                let response = try connection.get(path, range: header)
                XCTAssertEqual(response.status, 206, "\(pass) \(header)")
                XCTAssertEqual(response.header("Content-Range"),
                               "bytes \(expected.lowerBound)-\(expected.upperBound - 1)/\(size)", header)
                XCTAssertBytes(response.body, equal: file, range: expected)
            }
            if pass == "cold" { fixture.origin.clearAccessLog() }
        }
        XCTAssertEqual(fixture.origin.settledAccessLog().count, 0, "the warm pass must be served from the cache")
    }

    /// Cached 200-499 and 700-799; a request for 0-999 fetches exactly the three gaps.
    func testThreeGapPlanFetchesOnlyTheGaps() throws {
        let file = try fixture.file("gaps.bin", size: 5000, seed: 3)
        XCTAssertBytes(try fixture.get("gaps.bin", range: "bytes=200-499").body, equal: file, range: 200..<500)
        XCTAssertBytes(try fixture.get("gaps.bin", range: "bytes=700-799").body, equal: file, range: 700..<800)
        _ = fixture.origin.accessLog(waitingFor: 2)
        fixture.origin.clearAccessLog()
        let response = try fixture.get("gaps.bin", range: "bytes=0-999")
        XCTAssertEqual(response.status, 206)
        XCTAssertBytes(response.body, equal: file, range: 0..<1000)
        let log = fixture.origin.accessLog(waitingFor: 3)
        XCTAssertEqual(log.map { $0.range ?? "" }.sorted(), ["bytes=0-199", "bytes=500-699", "bytes=800-999"])
        XCTAssertEqual(log.map(\.bodyBytes).reduce(0, +), 600)
    }

    func testSixteenConcurrentColdReadersShareOneDownload() throws {
        let size = 20_000_000
        let file = try fixture.file("shared.bin", size: size, seed: 9)
        let url = try fixture.proxyURL("shared.bin")
        let results = ResultsBox(count: 16)
        // One thread per reader (concurrentPerform would run only 2 at a time on 2 cores),
        // released together so all 16 requests are in flight at once.
        let group = DispatchGroup()
        let start = DispatchSemaphore(value: 0)
        for index in 0..<16 {
            group.enter()
            Thread.detachNewThread {
                start.wait()
                results.set(index, Result { try RawHTTPClient.get(url: url, timeout: 60) })
                group.leave()
            }
        }
        for _ in 0..<16 { start.signal() }
        XCTAssertEqual(group.wait(timeout: .now() + 120), .success)
        for result in results.values {
            let response = try XCTUnwrap(result).get()
            XCTAssertEqual(response.status, 200)
            XCTAssertBytes(response.body, equal: file)
        }
        let origin = fixture.origin.settledAccessLog().reduce(0) { $0 + $1.bodyBytes }
        XCTAssertLessThanOrEqual(origin, 21_000_000, "origin sent \(origin) bytes for 16 readers")
        XCTAssertGreaterThanOrEqual(origin, size)
    }

    func testClientDisconnectMidBodyThenNewRequest() throws {
        let file = try fixture.file("abandon.bin", size: 8_000_000, seed: 5)
        let first = try fixture.connect()
        try first.sendRequest(path: try fixture.proxyPath("abandon.bin"))
        let partial = try first.readPartialResponse(maxBodyBytes: 100_000)
        XCTAssertEqual(partial.status, 200)
        first.abort()
        let second = try fixture.connect()
        let whole = try second.get(try fixture.proxyPath("abandon.bin"))
        XCTAssertBytes(whole.body, equal: file)
        let ping = try second.get("/ping")
        XCTAssertEqual(ping.status, 200)
    }

    func testRestartWithOriginStoppedServesCachedRanges() throws {
        let file = try fixture.file("persist.bin", size: 1_000_000, seed: 11)
        let cachedRanges = [0..<100_000, 400_000..<650_000, 999_000..<1_000_000]
        for range in cachedRanges {
            let response = try fixture.get("persist.bin", range: "bytes=\(range.lowerBound)-\(range.upperBound - 1)")
            XCTAssertBytes(response.body, equal: file, range: range)
        }
        fixture.origin.stop()
        try fixture.restartProxy()
        for range in cachedRanges {
            let response = try fixture.get("persist.bin", range: "bytes=\(range.lowerBound)-\(range.upperBound - 1)")
            XCTAssertEqual(response.status, 206)
            XCTAssertBytes(response.body, equal: file, range: range)
        }
        let inside = try fixture.get("persist.bin", range: "bytes=450000-450099")
        XCTAssertBytes(inside.body, equal: file, range: 450_000..<450_100)
        let head = try RawHTTPClient.head(url: try fixture.proxyURL("persist.bin"))
        XCTAssertEqual(head.header("Content-Length"), "1000000", "the length survives the restart")
        // Not cached and the origin is down: a clean 502, not a hang or a wrong byte.
        let missing = try fixture.get("persist.bin", range: "bytes=200000-200099")
        XCTAssertEqual(missing.status, 502)
    }

    func testFFmpegPlaysMP4WithMoovAtEnd() throws {
        let mp4 = fixture.root.appendingPathComponent("clip.mp4")
        _ = try MediaFixtures.makeMP4(at: mp4, duration: 6)
        XCTAssertTrue(try MediaFixtures.isMoovAtEnd(mp4))
        let url = try fixture.proxyURL("clip.mp4")
        XCTAssertTrue(url.hasSuffix("/clip.mp4"), url)
        let info = try MediaFixtures.ffprobe(url: url)
        XCTAssertTrue(info.hasVideo)
        XCTAssertTrue(info.hasAudio)
        XCTAssertEqual(info.duration ?? 0, 6, accuracy: 0.5)
        let copy = try MediaFixtures.ffmpegCopyToNull(url: url)
        XCTAssertTrue(copy.succeeded, copy.stderr)
        // After playing, the cache holds the whole file: bytes are exact.
        let whole = try fixture.get("clip.mp4")
        XCTAssertEqual(whole.body, Array(try Data(contentsOf: mp4)))
    }
}

/// Deterministic numbers for reproducible ranges.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Results written by concurrent workers, one slot each.
final class ResultsBox: @unchecked Sendable {
    private let lock = NSLock()
    private var slots: [Result<RawResponse, Error>?]
    init(count: Int) { slots = Array(repeating: nil, count: count) }
    func set(_ index: Int, _ value: Result<RawResponse, Error>) {
        lock.lock()
        slots[index] = value
        lock.unlock()
    }
    var values: [Result<RawResponse, Error>?] {
        lock.lock()
        defer { lock.unlock() }
        return slots
    }
}
