import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One parsed HTTP/1.x response.
struct RawResponse: Sendable {
    var version: String
    var status: Int
    var reason: String
    /// Headers in wire order, names as sent.
    var headers: [(String, String)]
    /// Body after transfer decoding (chunked is decoded). For partial reads
    /// (`readPartialResponse`) these are the raw bytes received so far.
    var body: [UInt8]
    /// True when the body arrived with `Transfer-Encoding: chunked`.
    var wasChunked: Bool = false
    /// Sizes of the chunks received (chunked responses only), in order.
    var chunkSizes: [Int] = []
    /// The status line and headers as received (without the final CRLFCRLF).
    var rawHead: String = ""

    /// First value of header `name` (case-insensitive).
    func header(_ name: String) -> String? {
        headers.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
    }

    /// All values of header `name` (case-insensitive), in order.
    func headerValues(_ name: String) -> [String] {
        headers.filter { $0.0.caseInsensitiveCompare(name) == .orderedSame }.map(\.1)
    }

    subscript(header name: String) -> String? { header(name) }

    var contentLength: Int? { header("Content-Length").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } }
    var bodyString: String { String(decoding: body, as: UTF8.self) }

    /// Whether the server intends to keep the connection open after this response.
    var keepAlive: Bool {
        let conn = headerValues("Connection").joined(separator: ",").lowercased()
        if conn.contains("close") { return false }
        if version == "HTTP/1.0" { return conn.contains("keep-alive") }
        return true
    }
}

enum RawHTTPError: Error, CustomStringConvertible {
    case connectFailed(String)
    case timeout(String)
    /// The peer closed the connection before a complete message arrived.
    case closed(String)
    case malformed(String)
    case io(String)

    var description: String {
        switch self {
        case .connectFailed(let s): return "connect failed: \(s)"
        case .timeout(let s): return "timeout: \(s)"
        case .closed(let s): return "connection closed: \(s)"
        case .malformed(let s): return "malformed response: \(s)"
        case .io(let s): return "I/O error: \(s)"
        }
    }
}

/// A blocking HTTP/1.1 client connection over a POSIX socket, for tests.
/// Every read is bounded: `timeout` applies to each recv (SO_RCVTIMEO) and
/// `totalTimeout` to each whole response. Supports keep-alive reuse,
/// chunked decoding, HEAD, and abrupt disconnects mid-body.
final class RawHTTPConnection {
    let host: String
    let port: Int
    /// Idle timeout for a single recv/send, in seconds.
    let timeout: TimeInterval
    /// Upper bound for reading one whole response, in seconds.
    var totalTimeout: TimeInterval

    private var fd: Int32
    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// True once the peer has closed its side (EOF seen) or we closed.
    private(set) var isClosed = false

    /// Connects to `host`:`port` (IPv4 literal or "localhost") within `timeout` seconds.
    /// `source`: the local IPv4 address to connect from (e.g. "127.0.0.2", another client).
    init(host: String = "127.0.0.1", port: Int, timeout: TimeInterval = 10, totalTimeout: TimeInterval = 120,
         source: String? = nil) throws {
        self.host = host
        self.port = port
        self.timeout = timeout
        self.totalTimeout = totalTimeout
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPError.connectFailed("socket(): \(TestTools.errnoString())") }
        if let source {
            var local = TestTools.loopbackAddress(port: 0)
            inet_pton(AF_INET, source, &local.sin_addr)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                Glibc.close(fd)
                fd = -1
                isClosed = true
                throw RawHTTPError.connectFailed("bind to \(source): \(TestTools.errnoString())")
            }
        }
        do {
            try connectWithTimeout()
        } catch {
            Glibc.close(fd)
            fd = -1
            isClosed = true
            throw error
        }
    }

    deinit { close() }

    private func connectWithTimeout() throws {
        var addr = TestTools.loopbackAddress(port: port)
        let literal = host == "localhost" ? "127.0.0.1" : host
        guard inet_pton(AF_INET, literal, &addr.sin_addr) == 1 else {
            throw RawHTTPError.connectFailed("only IPv4 literals are supported, got \(host)")
        }
        let flags = fcntl(fd, F_GETFL, 0)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if rc != 0 {
            guard errno == EINPROGRESS else {
                throw RawHTTPError.connectFailed("\(host):\(port): \(TestTools.errnoString())")
            }
            var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let ready = poll(&pfd, 1, Int32(timeout * 1000))
            if ready == 0 { throw RawHTTPError.timeout("connect to \(host):\(port)") }
            var soError: Int32 = 0
            var len = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &len)
            if ready < 0 || soError != 0 {
                throw RawHTTPError.connectFailed("\(host):\(port): \(TestTools.errnoString(soError != 0 ? soError : errno))")
            }
        }
        _ = fcntl(fd, F_SETFL, flags)
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    // MARK: Sending

    func send(_ bytes: [UInt8]) throws {
        guard fd >= 0 else { throw RawHTTPError.closed("send on a closed connection") }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { throw RawHTTPError.timeout("send") }
                throw RawHTTPError.io("send: \(TestTools.errnoString())")
            }
            offset += n
        }
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Sends one request. Adds `Host` unless given in `headers`, and
    /// `Content-Length` when `body` is non-nil and none is given.
    func sendRequest(method: String = "GET", path: String, headers: [(String, String)] = [],
                     body: [UInt8]? = nil) throws {
        var head = "\(method) \(path) HTTP/1.1\r\n"
        if !headers.contains(where: { $0.0.lowercased() == "host" }) {
            head += "Host: \(host):\(port)\r\n"
        }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body, !headers.contains(where: { $0.0.lowercased() == "content-length" }) {
            head += "Content-Length: \(body.count)\r\n"
        }
        head += "\r\n"
        try send(Array(head.utf8) + (body ?? []))
    }

    /// Sends a request and reads its full response (keep-alive friendly).
    func request(method: String = "GET", path: String, headers: [(String, String)] = [],
                 body: [UInt8]? = nil) throws -> RawResponse {
        try sendRequest(method: method, path: path, headers: headers, body: body)
        return try readResponse(method: method)
    }

    /// GET with an optional `Range` header value, e.g. "bytes=100-199".
    func get(_ path: String, range: String? = nil, headers: [(String, String)] = []) throws -> RawResponse {
        var all = headers
        if let range { all.append(("Range", range)) }
        return try request(path: path, headers: all)
    }

    // MARK: Reading

    /// Reads one complete response to a request made with `method`
    /// (HEAD → no body). Skips interim 1xx responses (except 101).
    func readResponse(method: String = "GET") throws -> RawResponse {
        let deadline = Date().addingTimeInterval(totalTimeout)
        while true {
            var response = try readHead(deadline: deadline)
            if (100..<200).contains(response.status) && response.status != 101 { continue }
            try readBody(into: &response, method: method, deadline: deadline)
            if !response.keepAlive { close() }
            return response
        }
    }

    /// Reads only the status line and headers; the body stays unread on the
    /// socket (read it with `readRawBytes`/`readUntilClose`, or `abort()`).
    func readResponseHead() throws -> RawResponse {
        try readHead(deadline: Date().addingTimeInterval(totalTimeout))
    }

    /// Reads the head and then at most `maxBodyBytes` raw (not de-chunked)
    /// body bytes — fewer only if the peer closes first. Use it to model a
    /// client that disconnects mid-body: follow with `abort()` or `close()`.
    func readPartialResponse(maxBodyBytes: Int) throws -> RawResponse {
        let deadline = Date().addingTimeInterval(totalTimeout)
        var response = try readHead(deadline: deadline)
        var body: [UInt8] = []
        while body.count < maxBodyBytes {
            if readIndex >= buffer.count, try !fill(deadline: deadline, eofAllowed: true) { break }
            let take = min(maxBodyBytes - body.count, buffer.count - readIndex)
            body += buffer[readIndex..<(readIndex + take)]
            readIndex += take
        }
        response.body = body
        return response
    }

    /// Reads exactly `count` raw bytes from the socket.
    func readRawBytes(_ count: Int) throws -> [UInt8] {
        try readExactly(count, deadline: Date().addingTimeInterval(totalTimeout))
    }

    /// Reads raw bytes until the peer closes the connection.
    func readUntilClose() throws -> [UInt8] {
        let deadline = Date().addingTimeInterval(totalTimeout)
        while try fill(deadline: deadline, eofAllowed: true) {}
        let out = Array(buffer[readIndex...])
        readIndex = buffer.count
        return out
    }

    /// True when the peer has sent something (bytes, or its close) not read yet.
    var hasSomethingToRead: Bool {
        if isClosed || readIndex < buffer.count { return true }
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&pfd, 1, 0) > 0
    }

    /// True if the peer has closed (or reset) the connection within `timeout`
    /// seconds; false if it is still open (pending data counts as open).
    func peerClosed(within timeout: TimeInterval = 1) -> Bool {
        if isClosed { return true }
        if readIndex < buffer.count { return false }
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&pfd, 1, Int32(timeout * 1000))
        if ready <= 0 { return false }
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }

    /// Closes the socket normally (FIN).
    func close() {
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
        isClosed = true
    }

    /// Closes abruptly with a TCP RST (SO_LINGER 0), like a player that
    /// drops the connection mid-download.
    func abort() {
        if fd >= 0 {
            var lin = linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &lin, socklen_t(MemoryLayout<linger>.size))
        }
        close()
    }

    // MARK: Internals

    /// Appends more bytes to the buffer. Returns false on EOF when
    /// `eofAllowed`, otherwise throws on EOF.
    private func fill(deadline: Date, eofAllowed: Bool = false) throws -> Bool {
        guard fd >= 0 else {
            if eofAllowed { return false }
            throw RawHTTPError.closed("read on a closed connection")
        }
        if readIndex > 1 << 20, readIndex >= buffer.count / 2 {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            if Date() > deadline { throw RawHTTPError.timeout("response not complete within \(totalTimeout)s") }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                buffer += chunk[0..<n]
                return true
            }
            if n == 0 {
                isClosed = true
                if eofAllowed { return false }
                throw RawHTTPError.closed("peer closed before the message was complete")
            }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK {
                throw RawHTTPError.timeout("no data for \(timeout)s")
            }
            if errno == ECONNRESET {
                isClosed = true
                if eofAllowed { return false }
                throw RawHTTPError.closed("connection reset by peer")
            }
            throw RawHTTPError.io("recv: \(TestTools.errnoString())")
        }
    }

    private func readExactly(_ count: Int, deadline: Date) throws -> [UInt8] {
        while buffer.count - readIndex < count { _ = try fill(deadline: deadline) }
        let out = Array(buffer[readIndex..<(readIndex + count)])
        readIndex += count
        return out
    }

    /// Reads one CRLF-terminated line (without the CRLF).
    private func readLine(deadline: Date, limit: Int = 64 * 1024) throws -> String {
        // Scanned bytes are counted from readIndex: fill() may compact the buffer.
        var scanned = 0
        while true {
            if let lf = buffer[(readIndex + scanned)...].firstIndex(of: UInt8(ascii: "\n")) {
                var end = lf
                if end > readIndex, buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                let line = String(decoding: buffer[readIndex..<end], as: UTF8.self)
                readIndex = lf + 1
                return line
            }
            if buffer.count - readIndex > limit { throw RawHTTPError.malformed("line longer than \(limit) bytes") }
            scanned = buffer.count - readIndex
            _ = try fill(deadline: deadline)
        }
    }

    private func readHead(deadline: Date) throws -> RawResponse {
        let statusLine = try readLine(deadline: deadline)
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let status = Int(parts[1]) else {
            throw RawHTTPError.malformed("bad status line: \(statusLine.debugDescription)")
        }
        var headers: [(String, String)] = []
        var rawLines = [statusLine]
        while true {
            let line = try readLine(deadline: deadline)
            if line.isEmpty { break }
            rawLines.append(line)
            guard let colon = line.firstIndex(of: ":") else {
                throw RawHTTPError.malformed("bad header line: \(line.debugDescription)")
            }
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers.append((name, value))
        }
        return RawResponse(version: String(parts[0]), status: status,
                           reason: parts.count > 2 ? String(parts[2]) : "",
                           headers: headers, body: [], rawHead: rawLines.joined(separator: "\r\n"))
    }

    private func readBody(into response: inout RawResponse, method: String, deadline: Date) throws {
        if method.uppercased() == "HEAD" || response.status == 204 || response.status == 304
            || (100..<200).contains(response.status) {
            return
        }
        let te = response.headerValues("Transfer-Encoding").joined(separator: ",").lowercased()
        if te.contains("chunked") {
            response.wasChunked = true
            var body: [UInt8] = []
            while true {
                let sizeLine = try readLine(deadline: deadline)
                let hex = sizeLine.split(separator: ";", maxSplits: 1).first.map {
                    $0.trimmingCharacters(in: .whitespaces)
                } ?? ""
                guard let size = Int(hex, radix: 16), size >= 0 else {
                    throw RawHTTPError.malformed("bad chunk size line: \(sizeLine.debugDescription)")
                }
                if size == 0 {
                    // Trailers, up to the empty line.
                    while try !readLine(deadline: deadline).isEmpty {}
                    break
                }
                response.chunkSizes.append(size)
                body += try readExactly(size, deadline: deadline)
                let crlf = try readLine(deadline: deadline)
                guard crlf.isEmpty else { throw RawHTTPError.malformed("missing CRLF after chunk data") }
            }
            response.body = body
        } else if let length = response.contentLength {
            response.body = try readExactly(length, deadline: deadline)
        } else {
            // No framing: the body runs until the server closes.
            while try fill(deadline: deadline, eofAllowed: true) {}
            response.body = Array(buffer[readIndex...])
            readIndex = buffer.count
            close()
        }
    }
}

/// One-shot conveniences taking absolute http URLs.
enum RawHTTPClient {
    /// Splits "http://127.0.0.1:8080/a/b?c" into ("127.0.0.1", 8080, "/a/b?c").
    static func parse(url: String) throws -> (host: String, port: Int, path: String) {
        guard url.hasPrefix("http://") else { throw RawHTTPError.malformed("only http:// URLs are supported: \(url)") }
        let rest = url.dropFirst("http://".count)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        let path = slash == rest.endIndex ? "/" : String(rest[slash...])
        var host = String(authority)
        var port = 80
        if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            guard let p = Int(authority[authority.index(after: colon)...]) else {
                throw RawHTTPError.malformed("bad port in \(url)")
            }
            port = p
        }
        return (host, port, path)
    }

    /// Opens a connection, sends one request, reads the response, closes.
    static func request(method: String = "GET", url: String, headers: [(String, String)] = [],
                        body: [UInt8]? = nil, timeout: TimeInterval = 10) throws -> RawResponse {
        let (host, port, path) = try parse(url: url)
        let conn = try RawHTTPConnection(host: host, port: port, timeout: timeout)
        defer { conn.close() }
        return try conn.request(method: method, path: path, headers: headers, body: body)
    }

    /// GET `url`, with an optional Range header value ("bytes=0-99").
    static func get(url: String, range: String? = nil, headers: [(String, String)] = [],
                    timeout: TimeInterval = 10) throws -> RawResponse {
        var all = headers
        if let range { all.append(("Range", range)) }
        return try request(url: url, headers: all, timeout: timeout)
    }

    static func head(url: String, headers: [(String, String)] = [], timeout: TimeInterval = 10) throws -> RawResponse {
        try request(method: "HEAD", url: url, headers: headers, timeout: timeout)
    }
}
