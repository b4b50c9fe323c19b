import CacheHTTP
import CacheIO

/// Builds response heads; caches the Date value per second.
struct ResponseHeads {
    private var dateSecond = -1
    private var dateValue = ""
    /// The Cache-Status of a response the cache did not take part in (RFC 9211).
    var bypassStatus = CacheStatusField.bypass.value(name: "httpcache")
    /// Cache-Status values of plain hits by ttl: a copy's ttl holds for its second, so nearly every hit finds
    /// its text here (~1,400 instructions saved). Bounded; started over when full or renamed.
    private var hitStatusName = ""
    private var hitStatuses: [Int?: String] = [:]
    private static let hitStatusesMax = 256

    mutating func date() -> String {
        let now = Int(WallClock.seconds())
        if now != dateSecond {
            dateSecond = now
            dateValue = HTTPDate.string(epochSeconds: now)
        }
        return dateValue
    }

    mutating func hitStatus(ttl: Int?, name: String) -> String {
        if name != hitStatusName || hitStatuses.count >= Self.hitStatusesMax {
            hitStatuses.removeAll(keepingCapacity: true)
            hitStatusName = name
        }
        if let value = hitStatuses[ttl] { return value }
        let value = CacheStatusField(hit: true, ttl: ttl).value(name: name)
        hitStatuses[ttl] = value
        return value
    }

    mutating func simple(_ status: Int, _ body: String, keepAlive: Bool, extra: [(String, String)] = [],
                         includeBody: Bool = true, contentType: String = "text/plain; charset=utf-8") -> [UInt8] {
        var headers = HTTPHeaders()
        headers.add("Server", "HTTPCache")
        headers.add("Date", date())
        for (name, value) in extra { headers.add(name, value) }
        headers.add("Cache-Status", bypassStatus)
        headers.add("Content-Type", contentType)
        headers.add("Content-Length", String(body.utf8.count))
        headers.add("Connection", keepAlive ? "keep-alive" : "close")
        var bytes = HTTPResponseHead(version: .http11, status: status, reason: HTTPStatus.reason(status), headers: headers).serialized()
        if includeBody { bytes.append(contentsOf: body.utf8) }
        return bytes
    }
}
