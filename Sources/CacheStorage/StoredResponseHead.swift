// The metadata fuzz target compiles this file in one module with CacheHTTP's
// sources (Fuzz/targets.list), where there is no CacheHTTP to import.
#if canImport(CacheHTTP)
import CacheHTTP
#endif

/// The part of an origin response head kept to replay and judge it later (RFC 9111 §3, §4): status,
/// end-to-end fields, the two clock readings age needs, the request's secondary key (§4.1). Framing fields
/// (Content-Length, Content-Range, Transfer-Encoding) are not kept: each response computes its own.
package struct StoredResponseHead: Sendable, Equatable {
    package var status = 0  // 0 only while decoding
    package var headers = HTTPHeaders()
    /// Seconds since the epoch (RFC 9111 §4.2.3 request_time, response_time).
    package var requestTime: Int64 = 0
    package var responseTime: Int64 = 0
    package var varyKey: VaryKey?  // the secondary key under the response's Vary; nil before this was kept
    /// An unsafe request to the URL succeeded (RFC 9111 §4.4): stale until revalidated. Marking,
    /// not removing, keeps the bytes for a 304 and never races a removal with a new entry.
    package var invalidated = false

    package static let framingFields: Set<String> = ["content-length", "content-range", "transfer-encoding"]

    package init() {}

    package init(status: Int, headers: HTTPHeaders, requestTime: Int64, responseTime: Int64, varyKey: VaryKey?) {
        self.status = status
        self.headers = headers
        self.requestTime = requestTime
        self.responseTime = responseTime
        self.varyKey = varyKey
    }

    /// The policy layer's view (times in whole seconds).
    package var policyHead: StoredHead {
        StoredHead(status: status, headers: headers, requestTime: Int(requestTime), responseTime: Int(responseTime))
    }

    /// One line per fact; field values hold no line breaks (the parser refuses them).
    func encodedLines() -> [String] {
        var lines = ["status \(status)", "request-time \(requestTime)", "response-time \(responseTime)"]
        for field in headers { lines.append("header \(field.name): \(field.value)") }
        if invalidated { lines.append("invalidated") }
        if let varyKey {
            lines.append("vary-key")
            for entry in varyKey.entries {
                lines.append(entry.value.map { "vary \(entry.name): \($0)" } ?? "vary \(entry.name)")
            }
        }
        return lines
    }

    enum Line {
        case status, requestTime, responseTime, header, invalidated, varyKey, vary

        init?(_ key: MetadataBytes) {
            switch key.count {
            case 6 where key.equals("status"): self = .status
            case 6 where key.equals("header"): self = .header
            case 12 where key.equals("request-time"): self = .requestTime
            case 13 where key.equals("response-time"): self = .responseTime
            case 11 where key.equals("invalidated"): self = .invalidated
            case 8 where key.equals("vary-key"): self = .varyKey
            case 4 where key.equals("vary"): self = .vary
            default: return nil
            }
        }
    }

    /// "name: value" (exactly one space after the colon) or "name" alone (value nil); split at bytes,
    /// not Characters, so every value reads back byte for byte.
    private static func field(_ text: MetadataBytes) -> (String, String?)? {
        guard let colon = text.firstIndex(of: UInt8(ascii: ":")) else { return (text.string, nil) }
        let start = colon + 1
        guard start < text.endIndex, text[start] == UInt8(ascii: " ") else {
            return start == text.endIndex ? (text.prefix(upTo: colon).string, "") : nil
        }
        return (text.prefix(upTo: colon).string, text.suffix(from: start + 1).string)
    }

    /// Reads one line of `encodedLines()`; false when it is malformed.
    mutating func decode(_ line: Line, value: MetadataBytes) -> Bool {
        switch line {
        case .status:
            guard let s = value.int64, (100...999).contains(s) else { return false }
            status = Int(s)
        case .requestTime:
            guard let t = value.int64 else { return false }
            requestTime = t
        case .responseTime:
            guard let t = value.int64 else { return false }
            responseTime = t
        case .header:
            guard let (name, fieldValue) = Self.field(value), !name.isEmpty, let fieldValue else { return false }
            headers.add(name, fieldValue)
        case .invalidated:
            invalidated = true
        case .varyKey:
            if varyKey == nil { varyKey = VaryKey(entries: []) }
        case .vary:
            var key = varyKey ?? VaryKey(entries: [])
            guard let (name, fieldValue) = Self.field(value) else { return false }
            key.entries.append(.init(name: name, value: fieldValue))
            varyKey = key
        }
        return true
    }
}
