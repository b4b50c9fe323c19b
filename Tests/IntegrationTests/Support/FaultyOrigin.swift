import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What the fault-injecting origin does for one path.
enum Fault: Sendable {
    /// A well-behaved origin: Range honoured (206), Content-Length, keep-alive.
    case none
    /// Sends the head (announcing the full length) and `after` body bytes, then closes.
    case closeMidBody(after: Int)
    /// Answers every request with 200 and the whole body (Range ignored).
    case ignoreRange
    /// A 206 whose Content-Range and bytes start `shift` bytes later than asked.
    case wrongContentRange(shift: Int)
    /// 200 with a chunked body of unknown length in pieces of `piece` bytes (Range ignored);
    /// with a `pause`, the head and first piece go out, then the rest after that many seconds.
    case chunked(piece: Int, pause: TimeInterval = 0)
    /// Reads the request and never answers.
    case stallBeforeHead
    /// Sends the head and `after` body bytes, then nothing; the connection stays open.
    case stallMidBody(after: Int)
    /// The usual Content-Length, but `extra` more bytes after the body, in the same write.
    case extraBytes(Int)
    /// `status` with this Location (and a short body).
    case redirect(status: Int, location: String)
    /// A normal response, then the connection is closed without a word
    /// (no `Connection: close`), like an origin dropping an idle connection.
    case closeAfterResponse
    /// Answers the first request on a connection normally and closes the
    /// connection, unanswered, on the next: a keep-alive connection that died
    /// just as it was reused.
    case dropReusedRequests
    /// Answers the first request for the path normally, then reads every
    /// later one and never answers (its connection stays open): an origin
    /// that hangs on a kept-alive connection, and on any fresh one too.
    case stallAfterFirstResponse
    /// Waits this many seconds, then answers normally.
    case delayed(TimeInterval)
    /// 200 with `Cache-Control: max-age=600`, a wrong `Content-Length: 1` and
    /// `Transfer-Encoding: chunked` (which frames it, RFC 9112 §6.3), the
    /// whole body in two chunks; then closes, as after a suspect message.
    case lengthAndChunked
    /// A 103 Early Hints with this Link field, then the normal response.
    case earlyHints(link: String)
    /// Reads the request and closes the connection without a byte of answer.
    case dropBeforeHead
    /// 101 Switching Protocols (never asked for), then silence.
    case switchingProtocols
    /// `status` with these extra fields and the whole body (Range ignored;
    /// none for 204 and 304), as an origin answers with a status of its
    /// choice (a 404 with an Expires in the past, a 203, a 410…).
    case status(Int, fields: [String: String])
    /// 200 with a chunked body that never ends: `body` over and over, until
    /// the peer goes away (or `limit` bytes, to stay bounded). Counts what it sent.
    case endless(limit: Int)
}

/// One request the faulty origin received.
struct FaultyRequest: Sendable {
    var path: String
    var headers: [(String, String)]
    /// Serial number of the connection it came on (1, 2, ...).
    var connection: Int

    func header(_ name: String) -> String? {
        headers.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
    }
    var range: String? { header("Range") }
}

/// A small HTTP/1.1 origin of our own on a loopback port, for what nginx
/// cannot be made to do: break framing, ignore Range, lie in Content-Range,
/// stall, drop connections. Threads and blocking POSIX sockets; each path has
/// a body and a `Fault`.
final class FaultyOrigin: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let lock = NSLock()
    private var bodies: [String: [UInt8]] = [:]
    private var faults: [String: Fault] = [:]
    private var log: [FaultyRequest] = []
    private var open: Set<Int32> = []
    private var accepted = 0
    private var stopped = false
    private var fields: [String: String] = [:]

    /// Fields added to every response head (e.g. a Cache-Control), unless the fault sets them.
    var extraFields: [String: String] {
        get { lock.withLock { fields } }
        set { lock.withLock { fields = newValue } }
    }

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = TestTools.loopbackAddress(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            close(fd)
            throw TestSupportError("faulty origin: bind/listen failed: \(TestTools.errnoString())")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    deinit { stop() }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Serves `body` at `path` with `fault`.
    func serve(_ path: String, body: [UInt8] = [], fault: Fault = .none) {
        lock.withLock {
            bodies[path] = body
            faults[path] = fault
        }
    }

    /// Stops serving `path` (404 from now on).
    func remove(_ path: String) {
        lock.withLock {
            bodies[path] = nil
            faults[path] = nil
        }
    }

    /// Changes only the behaviour of `path`.
    func setFault(_ path: String, _ fault: Fault) {
        lock.withLock { faults[path] = fault }
    }

    var requests: [FaultyRequest] { lock.withLock { log } }
    func requests(for path: String) -> [FaultyRequest] { requests.filter { $0.path == path } }
    func clearLog() { lock.withLock { log.removeAll() } }
    var connectionsAccepted: Int { lock.withLock { accepted } }
    /// Body bytes sent by `.endless` responses so far.
    var endlessBytesSent: Int { lock.withLock { endlessSent } }
    private var endlessSent = 0
    /// Connections the peer has not closed yet.
    var openConnections: Int { lock.withLock { open.count } }

    /// Stops accepting and ends open connections. Once only: a second close
    /// of the listener could hit a descriptor number reused by someone else.
    func stop() {
        let fds: [Int32]? = lock.withLock {
            guard !stopped else { return nil }
            stopped = true
            return Array(open)
        }
        guard let fds else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for fd in fds { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    // MARK: serving

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR { continue }
                return
            }
            let serial: Int? = lock.withLock {
                guard !stopped else { return nil }
                accepted += 1
                open.insert(fd)
                return accepted
            }
            guard let serial else {
                close(fd)
                return
            }
            Thread.detachNewThread { [self] in
                handle(fd, serial)
                lock.withLock { _ = open.remove(fd) }
                close(fd)
            }
        }
    }

    private func handle(_ fd: Int32, _ serial: Int) {
        var buffer: [UInt8] = []
        var served = 0
        while let (path, headers) = readRequest(fd, &buffer) {
            let request = FaultyRequest(path: path, headers: headers, connection: serial)
            let known: ([UInt8], Fault, Int)? = lock.withLock {
                let earlier = log.count { $0.path == path }
                log.append(request)
                return bodies[path].map { ($0, faults[path] ?? .none, earlier) }
            }
            guard let (body, fault, earlier) = known else {
                send(fd, head(404, ["Content-Length": "10"]) + Array("not found\n".utf8))
                continue
            }
            if case .dropReusedRequests = fault, served > 0 {
                shutdown(fd, Int32(SHUT_WR))
                return waitForClose(fd)
            }
            if case .stallAfterFirstResponse = fault, earlier > 0 { return waitForClose(fd) }
            served += 1
            guard respond(fd, request, body, fault) else { return waitForClose(fd) }
        }
    }

    /// Answers one request; false when the connection must not be used again.
    private func respond(_ fd: Int32, _ request: FaultyRequest, _ body: [UInt8], _ fault: Fault) -> Bool {
        let total = body.count
        let asked = request.range.flatMap { Self.parseRange($0, total: total) }
        switch fault {
        case .delayed(let seconds):
            Thread.sleep(forTimeInterval: seconds)
            return respond(fd, request, body, .none)
        case .earlyHints(let link):
            send(fd, Array("HTTP/1.1 103 Early Hints\r\nLink: \(link)\r\n\r\n".utf8))
            return respond(fd, request, body, .none)
        case .dropBeforeHead:
            shutdown(fd, Int32(SHUT_WR))
            return false
        case .none, .closeAfterResponse, .dropReusedRequests, .stallAfterFirstResponse:
            if let range = asked {
                send(fd, head(206, ["Content-Length": "\(range.count)",
                                    "Content-Range": "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(total)"])
                     + body[range])
            } else {
                send(fd, head(200, ["Content-Length": "\(total)"]) + body)
            }
            if case .closeAfterResponse = fault {
                shutdown(fd, Int32(SHUT_WR))
                return false
            }
            return true
        case .closeMidBody(let after):
            let range = asked ?? 0..<total
            var fields = ["Content-Length": "\(range.count)"]
            if asked != nil { fields["Content-Range"] = "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(total)" }
            let cut = range.lowerBound + min(after, range.count)
            send(fd, head(asked == nil ? 200 : 206, fields) + body[range.lowerBound..<cut])
            shutdown(fd, Int32(SHUT_WR))
            return false
        case .lengthAndChunked:
            let half = total / 2
            var bytes = head(200, ["Cache-Control": "max-age=600", "Content-Length": "1",
                                   "Transfer-Encoding": "chunked"])
            bytes += Array((String(half, radix: 16) + "\r\n").utf8) + body[0..<half] + Array("\r\n".utf8)
            bytes += Array((String(total - half, radix: 16) + "\r\n").utf8) + body[half...] + Array("\r\n0\r\n\r\n".utf8)
            send(fd, bytes)
            shutdown(fd, Int32(SHUT_WR))
            return false
        case .ignoreRange:
            send(fd, head(200, ["Content-Length": "\(total)"]) + body)
            return true
        case .wrongContentRange(let shift):
            let range = asked ?? 0..<total
            let lower = min(total - 1, range.lowerBound + shift)
            let upper = min(total, range.upperBound + shift)
            send(fd, head(206, ["Content-Length": "\(upper - lower)",
                                "Content-Range": "bytes \(lower)-\(upper - 1)/\(total)"]) + body[lower..<upper])
            return true
        case .chunked(let piece, let pause):
            var out = head(200, ["Transfer-Encoding": "chunked"])
            var offset = 0
            while offset < total {
                let end = min(total, offset + piece)
                out += Array((String(end - offset, radix: 16) + "\r\n").utf8) + body[offset..<end] + Array("\r\n".utf8)
                if offset == 0, pause > 0 {
                    send(fd, out)
                    out = []
                    Thread.sleep(forTimeInterval: pause)
                }
                offset = end
            }
            send(fd, out + Array("0\r\n\r\n".utf8))
            return true
        case .stallBeforeHead:
            return false
        case .stallMidBody(let after):
            let range = asked ?? 0..<total
            var fields = ["Content-Length": "\(range.count)"]
            if asked != nil { fields["Content-Range"] = "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(total)" }
            send(fd, head(asked == nil ? 200 : 206, fields) + body[range.lowerBound..<(range.lowerBound + min(after, range.count))])
            return false
        case .extraBytes(let extra):
            let range = asked ?? 0..<total
            var fields = ["Content-Length": "\(range.count)"]
            if asked != nil { fields["Content-Range"] = "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(total)" }
            send(fd, head(asked == nil ? 200 : 206, fields) + body[range] + [UInt8](repeating: 0x58, count: extra))
            return true
        case .status(let status, let extra):
            let bodiless = status == 204 || status == 304
            var fields = extra
            if !bodiless { fields["Content-Length"] = "\(total)" }
            send(fd, head(status, fields) + (bodiless ? [] : body))
            return true
        case .switchingProtocols:
            send(fd, Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n".utf8))
            return false
        case .endless(let limit):
            send(fd, head(200, ["Transfer-Encoding": "chunked"]))
            let piece = body.isEmpty ? [UInt8](repeating: 0x61, count: 64 << 10) : body
            let chunk = Array((String(piece.count, radix: 16) + "\r\n").utf8) + piece + Array("\r\n".utf8)
            var sent = 0
            while sent < limit {
                guard sendAll(fd, chunk) else { return false }
                sent += piece.count
                lock.withLock { endlessSent += piece.count }
            }
            send(fd, Array("0\r\n\r\n".utf8))
            return true
        case .redirect(let status, let location):
            let text = Array("moved to \(location)\n".utf8)
            send(fd, head(status, ["Location": location, "Content-Length": "\(text.count)"]) + text)
            return true
        }
    }

    /// Keeps a connection open without answering until the peer closes it.
    private func waitForClose(_ fd: Int32) {
        var byte: UInt8 = 0
        while true {
            let n = recv(fd, &byte, 1, 0)
            if n == 0 || (n < 0 && errno != EINTR) { return }
        }
    }

    private func head(_ status: Int, _ given: [String: String]) -> [UInt8] {
        let fields = extraFields.merging(given) { _, own in own }
        var text = "HTTP/1.1 \(status) Status\r\n"
        if fields["Content-Type"] == nil { text += "Content-Type: application/octet-stream\r\n" }
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        return Array((text + "\r\n").utf8)
    }

    /// Like `send`, telling whether every byte went (false once the peer is gone).
    private func sendAll(_ fd: Int32, _ data: [UInt8]) -> Bool {
        var offset = 0
        while offset < data.count {
            let n = data.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    private func send<C: Collection<UInt8>>(_ fd: Int32, _ bytes: C) {
        let data = Array(bytes)
        var offset = 0
        while offset < data.count {
            let n = data.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            offset += n
        }
    }

    /// Reads one request head; nil at EOF or on garbage.
    private func readRequest(_ fd: Int32, _ buffer: inout [UInt8]) -> (String, [(String, String)])? {
        let terminator: [UInt8] = [13, 10, 13, 10]
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            if let end = buffer.firstRange(of: terminator) {
                let text = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
                buffer.removeSubrange(..<end.upperBound)
                var lines = text.components(separatedBy: "\r\n")
                let requestLine = lines.removeFirst().split(separator: " ")
                guard requestLine.count == 3 else { return nil }
                let headers = lines.compactMap { line -> (String, String)? in
                    guard let colon = line.firstIndex(of: ":") else { return nil }
                    return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
                }
                return (String(requestLine[1]), headers)
            }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return nil }
            buffer += chunk[0..<n]
        }
    }

    /// A single `bytes=` range resolved against `total`; nil when absent or unsatisfiable.
    static func parseRange(_ value: String, total: Int) -> Range<Int>? {
        guard value.hasPrefix("bytes="), !value.contains(",") else { return nil }
        let spec = value.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard spec.count == 2 else { return nil }
        if spec[0].isEmpty {
            guard let suffix = Int(spec[1]), suffix > 0 else { return nil }
            return max(0, total - suffix)..<total
        }
        guard let first = Int(spec[0]), first < total else { return nil }
        let last = spec[1].isEmpty ? total - 1 : min(total - 1, Int(spec[1]) ?? -1)
        guard last >= first else { return nil }
        return first..<(last + 1)
    }
}
