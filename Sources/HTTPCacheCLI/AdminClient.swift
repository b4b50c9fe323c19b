import Foundation
import Glibc
import HTTPCache

/// Talks to the `/admin/cache` endpoint of the proxy that serves a folder.
struct AdminClient {
    let address: String
    let token: String

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    func list() throws -> [CachedResource] {
        let body = try request("GET", "/admin/cache", [:])
        guard let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
              let items = object["resources"] as? [[String: Any]] else {
            throw Failure(description: "unexpected answer from the proxy")
        }
        return items.map { item in
            let ranges = (item["ranges"] as? String ?? "").split(separator: ",").compactMap { part -> ClosedRange<Int64>? in
                let bounds = part.split(separator: "-")
                guard bounds.count == 2, let a = Int64(bounds[0]), let b = Int64(bounds[1]) else { return nil }
                return a...b
            }
            return CachedResource(url: item["url"] as? String ?? "", totalLength: (item["length"] as? NSNumber)?.int64Value,
                                  contentType: item["type"] as? String, cachedBytes: (item["cached"] as? NSNumber)?.int64Value ?? 0,
                                  cachedRanges: ranges, lastAccess: ((item["lastAccess"] as? NSNumber)?.doubleValue ?? 0) / 1000,
                                  isComplete: item["complete"] as? Bool ?? false, isInUse: item["inUse"] as? Bool ?? false)
        }
    }

    func post(_ path: String, _ query: [String: String]) throws {
        _ = try request("POST", path, query)
    }

    /// GET of a read-only endpoint (`/stats`, `/metrics`): the body on 2xx.
    func get(_ path: String) throws -> [UInt8] {
        try request("GET", path, [:])
    }

    /// One request on a fresh connection (Connection: close); the body on 2xx.
    func request(_ method: String, _ path: String, _ query: [String: String]) throws -> [UInt8] {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let encoded = query.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }
        let target = encoded.isEmpty ? path : path + "?" + encoded.joined(separator: "&")
        let head = "\(method) \(target) HTTP/1.1\r\nHost: \(address)\r\nX-HTTPCache-Token: \(token)\r\n"
            + "Content-Length: 0\r\nConnection: close\r\n\r\n"
        let response = try exchange(Array(head.utf8))
        guard let split = response.firstRange(of: Array("\r\n\r\n".utf8)) else {
            throw Failure(description: "no answer from the proxy at \(address)")
        }
        let statusLine = String(decoding: response[..<split.lowerBound].prefix { $0 != 13 }, as: UTF8.self)
        let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") ?? 0
        let body = Array(response[split.upperBound...])
        guard (200..<300).contains(status) else {
            let reason = (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])?["error"] as? String
            throw Failure(description: reason ?? "the proxy answered \(status)")
        }
        return body
    }

    private func exchange(_ request: [UInt8]) throws -> [UInt8] {
        let parts = address.split(separator: ":")
        guard let portText = parts.last, let port = UInt16(portText) else { throw Failure(description: "bad address \(address)") }
        let host = address.hasPrefix("[") ? String(address.dropFirst().prefix { $0 != "]" }) : String(parts[0])
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let info = list else {
            throw Failure(description: "cannot resolve \(host)")
        }
        defer { freeaddrinfo(list) }
        let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
            throw Failure(description: "cannot connect to the proxy at \(address)")
        }
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
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
