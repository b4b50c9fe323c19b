import CBenchSupport
import Foundation
import Glibc

/// One blocking GET over loopback, for requests timed on their own (the
/// scale scenario's first hit after a restart, the modelled player's
/// segments). Not for load: that is bs_load.c's.
enum SimpleHTTP {
    struct Response {
        var status: Int
        var body: [UInt8]
        /// When the first byte of the response arrived.
        var firstByte: Date
    }

    /// The response, or nil when the connection failed or `timeout` seconds passed.
    static func get(port: Int, path: String, timeout: Double = 5) -> Response? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var wait = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return nil }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
            return nil
        }
        // Connection: close — the response ends with the connection.
        var bytes: [UInt8] = []
        var firstByte: Date?
        var chunk = [UInt8](repeating: 0, count: 256 << 10)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 { return nil }  // timed out or reset
            if n == 0 { break }
            if firstByte == nil { firstByte = Date() }
            bytes += chunk[0..<n]
        }
        guard let firstByte, let end = bytes.firstRange(of: [13, 10, 13, 10]) else { return nil }
        let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self)
        let statusText = head.split(separator: " ", maxSplits: 2).dropFirst().first ?? ""
        guard let status = Int(statusText) else { return nil }
        return Response(status: status, body: Array(bytes[end.upperBound...]), firstByte: firstByte)
    }
}

/// The most descriptors a process had open, sampled from /proc/PID/fd on a
/// thread of its own while load runs.
final class DescriptorSampler: @unchecked Sendable {
    private let pid: Int32
    private let lock = NSLock()
    private var running = true
    private var highest = -1
    private let done = DispatchSemaphore(value: 0)

    init(pid: Int32, everyMilliseconds interval: UInt32 = 20) {
        self.pid = pid
        Thread.detachNewThread { [self] in
            while true {
                let count = Int(bs_count_fds(pid))
                lock.lock()
                highest = max(highest, count)
                let go = running
                lock.unlock()
                if !go { break }
                usleep(interval * 1000)
            }
            done.signal()
        }
    }

    /// Stops sampling; the peak (nil when /proc could not be read).
    func stop() -> Int? {
        lock.lock()
        running = false
        lock.unlock()
        done.wait()
        lock.lock()
        defer { lock.unlock() }
        return highest >= 0 ? highest : nil
    }
}

/// Times from a server's spawn: to its announcement (`listening on`) and to
/// the first correct 200 for an entry cached before the restart.
struct StartTimes {
    var listening: Double?
    var firstHit: Double?
    /// Whether the first 200 came from the cache (the origin saw no request).
    var fromCache = false
}

/// Asks `path` on `port` from the moment of the spawn until a correct 200
/// (the whole pattern of `seed` and `size`) or the deadline; returns the
/// seconds since `start`. Runs on its own thread while the spawn waits for
/// the announcement.
final class FirstHitProbe: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var seconds: Double?

    init(port: Int, path: String, seed: UInt64, size: UInt64, start: Date, deadline: Date) {
        Thread.detachNewThread { [self] in
            while Date() < deadline {
                if let response = SimpleHTTP.get(port: port, path: path, timeout: 2), response.status == 200,
                   UInt64(response.body.count) == size,
                   response.body.withUnsafeBytes({ bs_pattern_check(seed, 0, $0.baseAddress, $0.count) }) < 0 {
                    seconds = Date().timeIntervalSince(start)
                    break
                }
                usleep(2_000)
            }
            done.signal()
        }
    }

    /// Waits for the probe to end; nil when no correct 200 came before the deadline.
    func result() -> Double? {
        done.wait()
        return seconds
    }
}
