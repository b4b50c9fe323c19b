import CacheHTTP
import CacheProxy
import FoundationEssentials
import Glibc
import HTTPCache

/// Talks to the `/admin/cache` endpoint of the proxy that serves a folder.
struct AdminClient {
    let address: String
    let token: String

    /// A typed admin request whose answer is a JSON document of this shape (a wire type of the proxy's).
    func send<Answer: Decodable>(_ request: AdminRequest) throws(HTTPCacheError) -> Answer {
        try json(request.wire.method, request.wire.path, request.wire.query)
    }

    /// A typed admin request whose answer only says it was done.
    func perform(_ request: AdminRequest) throws(HTTPCacheError) {
        _ = try self.request(request.wire.method, request.wire.path, request.wire.query)
    }

    /// A request whose answer is a JSON document of this shape (a wire type of the proxy's).
    func json<Answer: Decodable>(_ method: String, _ path: String, _ query: [String: String]) throws(HTTPCacheError) -> Answer {
        let body = try request(method, path, query)
        guard let answer = try? JSONDecoder().decode(Answer.self, from: Data(body)) else {
            throw HTTPCacheError(.io, "unexpected answer from the proxy at \(address)")
        }
        return answer
    }

    /// One request on a fresh connection; the body on 2xx, else the `HTTPCacheError` the proxy answered
    /// with. Sent under the reserved prefix (`OwnRoutes`), which reaches the proxy itself in every mode.
    func request(_ method: String, _ path: String, _ query: [String: String]) throws(HTTPCacheError) -> [UInt8] {
        let encoded = query.map { "\($0.key)=\(Self.percentEncoded($0.value))" }
        let target = OwnRoutes.prefix + (encoded.isEmpty ? path : path + "?" + encoded.joined(separator: "&"))
        let head = "\(method) \(target) HTTP/1.1\r\nHost: \(address)\r\nX-HTTPCache-Token: \(token)\r\n"
            + "Content-Length: 0\r\nConnection: close\r\n\r\n"
        let response = try exchange(Array(head.utf8))
        guard let split = response.firstRange(of: Array("\r\n\r\n".utf8)) else {
            throw HTTPCacheError(.io, "no answer from the proxy at \(address)")
        }
        let statusLine = String(decoding: response[..<split.lowerBound].prefix { $0 != 13 }, as: UTF8.self)
        let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") ?? 0
        let body = Array(response[split.upperBound...])
        guard (200..<300).contains(status) else {
            throw (try? JSONDecoder().decode(HTTPCacheError.self, from: Data(body)))
                ?? HTTPCacheError(.io, "the proxy at \(address) answered \(status)")
        }
        return body
    }

    /// A query value with everything but unreserved characters (RFC 3986 §2.3) percent-encoded.
    static func percentEncoded(_ value: String) -> String {
        value.utf8.map { byte in
            let c = Character(Unicode.Scalar(byte))
            guard !(c.isASCII && (c.isLetter || c.isNumber) || "-._~".contains(c)) else { return String(c) }
            return "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
        }.joined()
    }

    private func exchange(_ request: [UInt8]) throws(HTTPCacheError) -> [UInt8] {
        let parts = address.split(separator: ":")
        guard let portText = parts.last, let port = UInt16(portText) else { throw HTTPCacheError(.io, "bad address \(address)") }
        let host = address.hasPrefix("[") ? String(address.dropFirst().prefix { $0 != "]" }) : String(parts[0])
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let info = list else {
            throw HTTPCacheError(.io, "cannot resolve \(host)")
        }
        defer { freeaddrinfo(list) }
        let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HTTPCacheError(.io, "socket failed") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
            throw HTTPCacheError(.io, "cannot connect to the proxy at \(address)")
        }
        _ = request.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var response: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            response.append(contentsOf: chunk[0..<n])
        }
        return response
    }
}
