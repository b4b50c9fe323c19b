import Foundation
import HTTPCache
import XCTest

/// Descriptors outside the store (issue #28): origin connections capped by
/// the share `DescriptorBudget` gives them, requests beyond it waiting; the
/// listener pausing at the client cap instead of accepting and refusing.
final class DescriptorBoundsTests: XCTestCase {
    /// 40 distinct slow misses at once with 128 descriptors: the origin never
    /// sees more connections than the budget's origin share (logged at debug
    /// level), and every request is answered 200, none failed for want of one.
    func testOriginConnectionsStayWithinTheirShareAndRequestsWait() throws {
        let origin = try FaultyOrigin()
        defer { origin.stop() }
        let count = 40
        for i in 0..<count { origin.serve("/slow/\(i)", body: Array("body \(i)".utf8), fault: .delayed(0.3)) }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (proxy, logged) = try ProxyProcess.limitedToDescriptors(128, cacheDirectory: directory.file("cache").path,
                                                                    logPath: directory.file("log").path)
        defer { proxy.terminate() }
        XCTAssertNotNil(logged, "the budget is logged at debug level")
        // An eighth of what is left of the limit at most, whatever was logged.
        let share = min(logged ?? 128, 128 / 8)
        XCTAssertLessThan(share, count, "the test needs more misses than origin connections")

        let peak = LockedValue(0)
        let sampling = LockedValue(true)
        Thread.detachNewThread {
            while sampling.withLock({ $0 }) {
                let open = origin.openConnections
                peak.withLock { $0 = max($0, open) }
                usleep(2_000)
            }
        }
        let statuses = LockedValue([Int]())
        let group = DispatchGroup()
        for i in 0..<count {
            let url = try MediaCache.proxyURL(for: origin.url("/slow/\(i)"), host: "127.0.0.1", port: proxy.port)
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                let response = try? RawHTTPClient.get(url: url, timeout: 30)
                statuses.withLock { $0.append(response?.body == Array("body \(i)".utf8) ? response!.status : -1) }
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 60), .success)
        sampling.withLock { $0 = false }
        XCTAssertEqual(statuses.withLock { $0 }.filter { $0 != 200 }, [], "every miss answered 200 with its body")
        XCTAssertGreaterThan(peak.withLock { $0 }, 0)
        XCTAssertLessThanOrEqual(peak.withLock { $0 }, share, "origin connections within their share")
    }

    /// At `--max-connections` with every connection busy, a newcomer waits
    /// (the listener pauses) and is served once a connection is free, where
    /// it used to get 503 at once.
    func testANewClientAtTheCapWaitsInsteadOfGetting503() throws {
        let origin = try FaultyOrigin()
        defer { origin.stop() }
        for i in 0..<5 { origin.serve("/slow/\(i)", body: Array("body \(i)".utf8), fault: .delayed(1)) }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let proxy = try ProxyProcess(cacheDirectory: directory.file("cache").path,
                                     extraArguments: ["--loops", "1", "--max-connections", "4",
                                                      "--max-connections-per-client", "4"])
        defer { proxy.terminate() }
        proxy.stderr.fileHandleForReading.readabilityHandler = { _ = $0.availableData }
        func path(_ i: Int) throws -> String {
            try RawHTTPClient.parse(url: MediaCache.proxyURL(for: origin.url("/slow/\(i)"), host: "127.0.0.1",
                                                                  port: proxy.port)).path
        }
        var busy: [RawHTTPConnection] = []
        for i in 0..<4 {
            let connection = try RawHTTPConnection(port: proxy.port, timeout: 10)
            try connection.sendRequest(path: path(i))
            busy.append(connection)
            // Read by the proxy (its download started) before the next one connects.
            XCTAssertTrue(TestTools.waitUntil(timeout: 5) { origin.requests(for: "/slow/\(i)").count == 1 })
        }
        let started = Date()
        let newcomer = try RawHTTPConnection(port: proxy.port, timeout: 10)
        try newcomer.sendRequest(path: path(4))
        let response = try newcomer.readResponse()
        XCTAssertEqual(response.status, 200, "served once a connection was free, not refused")
        XCTAssertEqual(response.body, Array("body 4".utf8))
        XCTAssertGreaterThan(Date().timeIntervalSince(started), 0.5, "it waited for a busy connection to finish")
        for (i, connection) in busy.enumerated() {
            XCTAssertEqual(try connection.readResponse().status, 200, "busy connection \(i)")
        }
    }
}
