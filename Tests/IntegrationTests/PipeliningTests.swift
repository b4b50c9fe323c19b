import Foundation
import HTTPCache
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Regressions of the connection life cycle: deep pipelines, pipelines
/// behind a slow miss, and clients that never read.
final class PipeliningTests: XCTestCase {
    /// 20,000 pipelined requests on one connection are all answered in order,
    /// and the proxy lives on (the old code recursed once per request).
    func testTwentyThousandPipelinedPingsAndHits() throws {
        let origin = try FaultyOrigin()
        defer { origin.stop() }
        let body = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        origin.serve("/small.bin", body: body)
        let proxy = try TestProxy()
        let path = try RawHTTPClient.parse(url: try proxy.url(for: origin.url("/small.bin"))).path
        XCTAssertEqual(try proxy.get(origin.url("/small.bin")).body, body)  // now cached

        for (target, expected) in [("/ping", Array("pong\n".utf8)), (path, body)] {
            let client = try PipelineClient(port: proxy.server.servingPort)
            let request = Array("GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
            client.sendInBackground(request, times: 20_000)
            let bodies = try client.readResponses(20_000, timeout: 120)
            XCTAssertEqual(bodies.count, 20_000)
            XCTAssertTrue(bodies.allSatisfy { $0.status == 200 && $0.body == expected }, "every response is right")
            client.close()
        }
        XCTAssertEqual(origin.requests(for: "/small.bin").count, 1, "the hits never went to the origin")
        XCTAssertEqual(try RawHTTPClient.get(url: "http://127.0.0.1:\(proxy.server.servingPort)/ping").bodyString, "pong\n")
    }

    /// 200 KiB of requests pipelined behind a miss on a slow origin are all
    /// answered (reading used to stop for good once 64 KiB were buffered).
    func testPipelineBehindASlowMissIsAllAnswered() throws {
        let origin = try FaultyOrigin()
        defer { origin.stop() }
        let body = [UInt8](repeating: 0x41, count: 1000)
        origin.serve("/slow.bin", body: body, fault: .delayed(1.0))
        let proxy = try TestProxy()
        let path = try RawHTTPClient.parse(url: try proxy.url(for: origin.url("/slow.bin"))).path
        let client = try PipelineClient(port: proxy.server.servingPort)
        let ping = Array("GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        let count = (200 << 10) / ping.count + 1
        client.send(Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
        client.sendInBackground(ping, times: count)
        let responses = try client.readResponses(count + 1, timeout: 60)
        XCTAssertEqual(responses.first?.body, body)
        XCTAssertEqual(responses.dropFirst().filter { $0.body == Array("pong\n".utf8) }.count, count)
        client.close()
    }

    /// A client that pipelines requests for a 1 MiB hit and never reads
    /// leaves the proxy's memory bounded, and others are still served.
    func testClientThatNeverReadsKeepsMemoryBounded() throws {
        let origin = try FaultyOrigin()
        defer { origin.stop() }
        let body = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        origin.serve("/big.bin", body: body)
        let proxy = try TestProxy()
        XCTAssertEqual(try proxy.get(origin.url("/big.bin")).body.count, body.count)
        let path = try RawHTTPClient.parse(url: try proxy.url(for: origin.url("/big.bin"))).path
        let before = residentBytes()
        let client = try PipelineClient(port: proxy.server.servingPort, receiveBuffer: 4096)
        // 2,000 requests would be 2 GiB of responses if they were all queued.
        client.sendInBackground(Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8), times: 2000)
        // Once it holds the most pipelined bytes it buffers, the proxy stops reading them.
        XCTAssertTrue(TestTools.waitUntil(timeout: 10) { !proxy.logs.lines(.debug, containing: "client pipelines ahead: reading paused").isEmpty },
                      "the proxy stops reading a client that never reads")
        let grown = residentBytes() - before
        Sanitizer.assertGrowth(grown, below: 64 << 20, "RSS grew by \(grown >> 20) MiB")
        let started = Date()
        XCTAssertEqual(try RawHTTPClient.get(url: "http://127.0.0.1:\(proxy.server.servingPort)/ping").bodyString, "pong\n")
        XCTAssertLessThan(Date().timeIntervalSince(started), 1)
        client.close()
    }

    private func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        return (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

/// A raw connection that can send from a background thread while the test
/// reads responses (a deep pipeline would otherwise deadlock on full buffers).
private final class PipelineClient: @unchecked Sendable {
    struct Response { var status: Int; var body: [UInt8] }
    // The fd is shared by one sending thread and the reading test thread:
    // send and recv on one socket from two threads is safe.
    private let fd: Int32
    private let sender = DispatchGroup()
    private var buffer: [UInt8] = []
    private var index = 0

    init(port: Int, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var addr = TestTools.loopbackAddress(port: port)
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else { throw RawHTTPError.connectFailed(TestTools.errnoString()) }
    }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }  // closed: the test is over
            offset += n
        }
    }

    func sendInBackground(_ request: [UInt8], times: Int) {
        let fd = self.fd
        DispatchQueue.global().async(group: sender) { [self] in
            let batch = 64
            let chunk = Array([[UInt8]](repeating: request, count: batch).joined())
            var left = times
            while left > 0 {
                let n = min(batch, left)
                send(n == batch ? chunk : Array(chunk.prefix(n * request.count)))
                left -= n
                if fcntl(fd, F_GETFD) < 0 { return }
            }
        }
    }

    /// Reads `count` Content-Length responses.
    func readResponses(_ count: Int, timeout: TimeInterval) throws -> [Response] {
        var tv = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let deadline = Date().addingTimeInterval(timeout)
        var out: [Response] = []
        out.reserveCapacity(count)
        while out.count < count {
            guard Date() < deadline else { throw RawHTTPError.timeout("\(out.count) of \(count) responses") }
            if let response = parseOne() { out.append(response); continue }
            var chunk = [UInt8](repeating: 0, count: 256 << 10)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw RawHTTPError.closed("after \(out.count) responses") }
            if index > 0 && index >= buffer.count / 2 {
                buffer.removeFirst(index)
                index = 0
            }
            buffer += chunk[0..<n]
        }
        return out
    }

    private func parseOne() -> Response? {
        let end = buffer.count
        var i = index
        while i + 3 < end {
            if buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 { break }
            i += 1
        }
        guard i + 3 < end else { return nil }
        let head = String(decoding: buffer[index..<i], as: UTF8.self)
        let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        var length = 0
        for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
            length = Int(line.dropFirst(15).trimmingCharacters(in: .whitespaces)) ?? 0
        }
        let bodyStart = i + 4
        guard end - bodyStart >= length else { return nil }
        let body = Array(buffer[bodyStart..<(bodyStart + length)])
        index = bodyStart + length
        return Response(status: status, body: body)
    }

    func close() {
        shutdown(fd, Int32(SHUT_RDWR))
        sender.wait()
        Glibc.close(fd)
    }
}
