// Test helpers for driving the CSupport C API from XCTest: a loop harness,
// thread-safe shared state, context objects for the C callbacks and a plain
// blocking POSIX client.
import CSupport
import Dispatch
import Foundation
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Default bound for every wait in these tests.
let testTimeout: TimeInterval = 20

// MARK: - Shared state

/// State written on the loop thread and awaited on the test thread.
final class Shared<State>: @unchecked Sendable {
    private let cond = NSCondition()
    private var state: State

    init(_ state: State) { self.state = state }

    @discardableResult
    func update<R>(_ body: (inout State) -> R) -> R {
        cond.lock()
        defer { cond.broadcast(); cond.unlock() }
        return body(&state)
    }

    var value: State {
        cond.lock()
        defer { cond.unlock() }
        return state
    }

    /// Waits until `pred` holds; false on timeout.
    func wait(timeout: TimeInterval = testTimeout, until pred: (State) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        cond.lock()
        defer { cond.unlock() }
        while !pred(state) {
            if !cond.wait(until: deadline) { return pred(state) }
        }
        return true
    }
}

// MARK: - Loop harness

/// A closure carried through cs_loop_post's `void *ctx`.
private final class Job {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
}

final class LoopHarness {
    let loop: OpaquePointer
    private var stopped = false

    init() throws {
        var err = [CChar](repeating: 0, count: 256)
        guard let loop = cs_loop_start(&err, err.count) else {
            throw NSError(domain: "cs_loop_start", code: 1,
                          userInfo: [NSLocalizedDescriptionKey: err.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }])
        }
        self.loop = loop
    }

    /// Posts a closure; returns cs_loop_post's result.
    @discardableResult
    func post(_ body: @escaping () -> Void) -> Int32 {
        postJob(loop, body)
    }

    /// Runs `body` on the loop thread and waits for it.
    func sync(_ body: @escaping () -> Void) {
        let sem = DispatchSemaphore(value: 0)
        let rc = post { body(); sem.signal() }
        XCTAssertEqual(rc, 0, "cs_loop_post")
        XCTAssertEqual(sem.wait(timeout: .now() + testTimeout), .success, "loop task timed out")
    }

    /// Stops the loop from a helper thread so a hang fails the test instead of blocking it.
    func stop(file: StaticString = #filePath, line: UInt = #line) {
        guard !stopped else { return }
        stopped = true
        let done = DispatchSemaphore(value: 0)
        let ref = LoopRef(loop)
        Thread.detachNewThread {
            cs_loop_stop(ref.ptr)
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + testTimeout), .success,
                       "cs_loop_stop did not return", file: file, line: line)
    }

    deinit { if !stopped { stop() } }
}

/// Lets a cs_loop pointer cross into a thread closure.
struct LoopRef: @unchecked Sendable {
    let ptr: OpaquePointer
    init(_ ptr: OpaquePointer) { self.ptr = ptr }
}

func postJob(_ loop: OpaquePointer, _ body: @escaping () -> Void) -> Int32 {
    let ctx = Unmanaged.passRetained(Job(body)).toOpaque()
    let rc = cs_loop_post(loop, { ctx in
        Unmanaged<Job>.fromOpaque(ctx!).takeRetainedValue().body()
    }, ctx)
    if rc != 0 { Unmanaged<Job>.fromOpaque(ctx).release() }
    return rc
}

// MARK: - Conn context

struct ConnLog {
    var received: [UInt8] = []
    var eofs = 0
    var drains = 0
    var connects: [Int32] = []
    var closes: [Int32] = []
}

/// The ctx of one cs_conn. The conn owns it: retained when bound, released
/// in on_close, so on_close also proves the ctx lifetime contract.
final class ConnProbe {
    var conn: OpaquePointer?
    let log = Shared(ConnLog())
    var keepReceived = true
    var onRead: ((ConnProbe, UnsafeRawBufferPointer) -> Void)?
    var onEOF: ((ConnProbe) -> Void)?
    var onDrain: ((ConnProbe) -> Void)?
    var onConnect: ((ConnProbe, Int32) -> Void)?
    var onClose: ((ConnProbe, Int32) -> Void)?

    static func from(_ ctx: UnsafeMutableRawPointer?) -> ConnProbe {
        Unmanaged<ConnProbe>.fromOpaque(ctx!).takeUnretainedValue()
    }

    /// Binds an accepted conn to this probe (loop thread).
    func bind(_ conn: OpaquePointer) {
        self.conn = conn
        var cbs = connCallbacks()
        cs_conn_bind(conn, &cbs, Unmanaged.passRetained(self).toOpaque())
    }

    /// Opens an outgoing conn owned by this probe (loop thread). Returns cs_connect's result.
    func connect(_ loop: OpaquePointer, port: Int) -> Int32 {
        var addr = loopbackAddress(port: port)
        var cbs = connCallbacks()
        let ctx = Unmanaged.passRetained(self).toOpaque()
        var out: OpaquePointer?
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { cs_connect(loop, $0, &cbs, ctx, &out) }
        }
        if rc == 0 { conn = out } else { Unmanaged<ConnProbe>.fromOpaque(ctx).release() }
        return rc
    }
}

func connCallbacks() -> cs_conn_callbacks {
    var cbs = cs_conn_callbacks()
    cbs.on_read = { ctx, data, len in
        let p = ConnProbe.from(ctx)
        let buf = UnsafeRawBufferPointer(start: data, count: len)
        if p.keepReceived { p.log.update { $0.received.append(contentsOf: buf) } }
        p.onRead?(p, buf)
    }
    cbs.on_eof = { ctx in
        let p = ConnProbe.from(ctx)
        p.log.update { $0.eofs += 1 }
        p.onEOF?(p)
    }
    cbs.on_drain = { ctx in
        let p = ConnProbe.from(ctx)
        p.log.update { $0.drains += 1 }
        p.onDrain?(p)
    }
    cbs.on_connect = { ctx, status in
        let p = ConnProbe.from(ctx)
        p.log.update { $0.connects.append(status) }
        p.onConnect?(p, status)
    }
    cbs.on_close = { ctx, error in
        let p = Unmanaged<ConnProbe>.fromOpaque(ctx!).takeRetainedValue()
        p.onClose?(p, error)
        p.conn = nil
        p.log.update { $0.closes.append(error) }
    }
    return cbs
}

// MARK: - Listener context

struct ListenerLog {
    var accepted = 0
    var closes = 0
}

/// The ctx of a cs_listener: hands each accepted conn to `onAccept`, which
/// must bind or close it.
final class ListenerProbe {
    var listener: OpaquePointer?
    let log = Shared(ListenerLog())
    var onAccept: (OpaquePointer) -> Void = { cs_conn_close($0) }

    /// Listens on host:0 (loop thread); returns the cs_listen result.
    func listen(_ loop: OpaquePointer, host: String = "127.0.0.1") -> Int32 {
        var cbs = cs_listener_callbacks()
        cbs.on_accept = { ctx, conn in
            let p = Unmanaged<ListenerProbe>.fromOpaque(ctx!).takeUnretainedValue()
            p.log.update { $0.accepted += 1 }
            p.onAccept(conn!)
        }
        cbs.on_close = { ctx in
            let p = Unmanaged<ListenerProbe>.fromOpaque(ctx!).takeRetainedValue()
            p.listener = nil
            p.log.update { $0.closes += 1 }
        }
        let ctx = Unmanaged.passRetained(self).toOpaque()
        var out: OpaquePointer?
        let rc = cs_listen(loop, host, 0, 64, 0, &cbs, ctx, &out)
        if rc == 0 { listener = out } else { Unmanaged<ListenerProbe>.fromOpaque(ctx).release() }
        return rc
    }

    var port: Int { Int(cs_listener_port(listener)) }
}

/// Starts a listener on the loop and returns it with its port.
func startListener(_ h: LoopHarness, onAccept: @escaping (OpaquePointer) -> Void) -> (ListenerProbe, Int) {
    let probe = ListenerProbe()
    probe.onAccept = onAccept
    var port = 0
    h.sync {
        XCTAssertEqual(probe.listen(h.loop), 0)
        port = probe.port
    }
    XCTAssertGreaterThan(port, 0)
    return (probe, port)
}

// MARK: - Sockets and data

func loopbackAddress(port: Int) -> sockaddr_in {
    var a = sockaddr_in()
    a.sin_family = sa_family_t(AF_INET)
    a.sin_port = in_port_t(UInt16(port).bigEndian)
    a.sin_addr.s_addr = inet_addr("127.0.0.1")
    return a
}

/// A plain blocking client used from the test thread; reads time out so
/// nothing can hang.
final class BlockingClient {
    let fd: Int32

    init(port: Int, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var tv = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var addr = loopbackAddress(port: port)
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else {
            let e = errno
            close(fd)
            throw POSIXError(.init(rawValue: e) ?? .EIO)
        }
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) -> Bool {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            off += n
        }
        return true
    }

    /// Sends what fits without blocking.
    func sendSome(_ bytes: [UInt8]) -> Int {
        bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
    }

    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Reads up to `max` bytes: [] at EOF, nil on error or timeout.
    func recv(max: Int = 65536) -> [UInt8]? {
        var buf = [UInt8](repeating: 0, count: max)
        let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, max) }
        if n < 0 { return nil }
        return Array(buf[0..<n])
    }

    /// Reads exactly `count` bytes (fewer on EOF or error).
    func recv(exactly count: Int) -> [UInt8] {
        var out: [UInt8] = []
        while out.count < count, let chunk = recv(max: count - out.count), !chunk.isEmpty {
            out += chunk
        }
        return out
    }

    /// Reads to EOF in chunks, sleeping between reads so the sender hits a
    /// full socket. Returns the data and the errno that ended it (0 at EOF).
    func readToEOF(chunk: Int = 65536, pauseMicros: UInt32 = 0, limit: Int = 64 << 20) -> ([UInt8], Int32) {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: chunk)
        while out.count <= limit {
            let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, chunk) }
            if n == 0 { return (out, 0) }
            if n < 0 { return (out, errno) }
            out.append(contentsOf: buf[0..<n])
            if pauseMicros > 0 { usleep(pauseMicros) }
        }
        return (out, EFBIG)
    }
}

/// Deterministic pseudo-random bytes (xorshift), so mismatches are not
/// hidden by repeating patterns.
func patternBytes(_ count: Int, seed: UInt64) -> [UInt8] {
    var x = seed | 1
    var out = [UInt8](repeating: 0, count: count)
    for i in 0..<count {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17
        out[i] = UInt8(truncatingIfNeeded: x)
    }
    return out
}

/// A temporary file with the given contents, opened read-only; removed on deinit.
final class TempFile {
    let path: String
    let fd: Int32

    init(_ bytes: [UInt8]) throws {
        path = NSTemporaryDirectory() + "cs-test-\(UUID().uuidString)"
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
            throw POSIXError(.EIO)
        }
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    }

    deinit {
        close(fd)
        unlink(path)
    }
}
