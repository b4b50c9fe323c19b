import Foundation
import HTTPCache
import XCTest

/// Issue #37: a CONNECT back into the proxy is refused in every spelling of
/// its address (one socket could otherwise chain thousands of tunnels), and
/// tunnels are capped well below the origin connection share, so idle ones
/// never leave a cache miss waiting.
final class TunnelBoundsTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory(prefix: "httpcache-tunnel-bounds")
    }

    override func tearDown() {
        directory.remove()
    }

    private func connectStatus(port: Int, to authority: String) throws -> Int {
        let connection = try RawHTTPConnection(port: port)
        defer { connection.close() }
        try connection.send("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        return try connection.readResponseHead().status
    }

    /// A name /etc/hosts maps to 127.x other than localhost (checked on the
    /// resolved address, not on the spelling), if the machine has one.
    private func loopbackHostName() -> String? {
        let hosts = (try? String(contentsOfFile: "/etc/hosts", encoding: .utf8)) ?? ""
        for line in hosts.split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 2, fields[0].hasPrefix("127.") else { continue }
            if let name = fields.dropFirst().first(where: { $0.contains(where: \.isLetter) && !$0.lowercased().contains("localhost") }) {
                return String(name)
            }
        }
        return nil
    }

    func testConnectToTheProxysOwnAddressIsRefusedInEverySpelling() throws {
        let proxy = try TestProxy()
        let port = proxy.server.servingPort
        var spellings = ["127.0.0.1", "localhost", "LocalHost.", "127.1", "2130706433", "0x7f000001", "0177.0.0.1",
                         "0x7f.0.0.1", "0.0.0.0", "0", "[::1]", "[::]", "[::ffff:127.0.0.1]", "127.0.0.1."]
        if let name = loopbackHostName() { spellings.append(name) }
        for host in spellings {
            XCTAssertEqual(try connectStatus(port: port, to: "\(host):\(port)"), 403, "CONNECT \(host):\(port)")
        }
        // Another loopback port is still a destination like any other (nothing listens there: 502).
        let closed = try TestTools.freePort()
        XCTAssertEqual(try connectStatus(port: port, to: "127.0.0.1:\(closed)"), 502)
    }

    /// 2,700 CONNECTs to the proxy itself, pipelined on one socket: one
    /// refusal and the socket closed; no tunnel, so no chain.
    func testPipelinedConnectsBackIntoTheProxyBuildNoChain() throws {
        let log = directory.file("access.log").path
        let proxy = try TestProxy { $0.accessLogPath = log }
        let port = proxy.server.servingPort
        let connection = try RawHTTPConnection(port: port, timeout: 10, totalTimeout: 20)
        defer { connection.close() }
        let line = "CONNECT 127.0.0.1:\(port) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n"
        try? connection.send(String(repeating: line, count: 2_700))  // the proxy may close before it read it all
        let answer = String(decoding: (try? connection.readUntilClose()) ?? [], as: UTF8.self)
        XCTAssertTrue(answer.hasPrefix("HTTP/1.1 403"), String(answer.prefix(200)))
        XCTAssertEqual(answer.components(separatedBy: "HTTP/1.1 ").count - 1, 1, "one answer, then the socket closed")
        // The proxy still answers, and its access log holds no tunnel.
        XCTAssertEqual(try RawHTTPClient.get(url: "http://127.0.0.1:\(port)/ping").status, 200)
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("/ping")
        })
        let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
        XCTAssertEqual(lines.filter { $0.contains("CONNECT") && $0.contains("\" 200") }.count, 0, "\(lines.prefix(5))")
        XCTAssertLessThanOrEqual(lines.filter { $0.contains("CONNECT") }.count, 1)
    }

    /// 200 idle tunnels from one client with 1,024 descriptors: those past
    /// the tunnel cap get 503 at once, and a cache miss is still answered
    /// within 5 s (the tunnels never take every origin slot).
    func testIdleTunnelsFromOneClientLeaveRoomForAMiss() throws {
        let root = directory.url.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let file = try TestFile.random(size: 200_000, seed: 37, in: root, name: "miss.bin")
        let origin = try NginxOrigin(root: root)
        let (proxy, logged) = try ProxyProcess.limitedToDescriptors(1024, cacheDirectory: directory.file("cache").path,
                                                                    logPath: directory.file("log").path)
        defer { proxy.terminate() }
        let originShare = try XCTUnwrap(logged, "budget logged")
        XCTAssertLessThan(originShare, 200, "the test needs more tunnels than origin connections")

        let authority = "127.0.0.1:\(origin.port)"
        var tunnels: [RawHTTPConnection] = []
        defer { tunnels.forEach { $0.close() } }
        for _ in 0..<200 {
            let connection = try RawHTTPConnection(port: proxy.port, timeout: 3)
            try connection.send("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
            tunnels.append(connection)
        }
        let started = Date()
        let url = try MediaCache.proxyURL(for: origin.url("/miss.bin"), host: "127.0.0.1", port: proxy.port)
        let miss = try RawHTTPClient.get(url: url, timeout: 5)
        XCTAssertEqual(miss.status, 200)
        XCTAssertBytes(miss.body, equal: file)
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "the miss is answered while the tunnels are idle")

        var statuses: [Int: Int] = [:]
        for connection in tunnels { statuses[(try? connection.readResponseHead().status) ?? -1, default: 0] += 1 }
        XCTAssertEqual(statuses[-1], nil, "every CONNECT answered at once: \(statuses)")
        let open = statuses[200] ?? 0
        XCTAssertGreaterThan(open, 0, "\(statuses)")
        XCTAssertLessThanOrEqual(open, originShare / 4, "tunnels stay well below the origin share: \(statuses)")
        XCTAssertEqual(statuses[503], 200 - open, "\(statuses)")
    }
}
