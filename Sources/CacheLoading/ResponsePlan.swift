import CacheHTTP

/// What a client asked of a resource, as far as the answer's shape goes.
package struct BodyRequest: Sendable {
    package var isHead: Bool
    package var isHTTP10: Bool
    package var keepAlive: Bool
    /// The single Range honoured (several are answered whole, as RFC 9110 allows).
    package var range: ByteRangeSpec?
    package var ifRange: String?
    /// The client's If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since.
    package var preconditions = HTTPHeaders()
    /// An in-process reader (no framing) gets a range of an unknown length as asked; HTTP, the whole body.
    package var rangesOfUnknownLength = false

    package init(isHead: Bool = false, isHTTP10: Bool = false, keepAlive: Bool = true,
                 range: ByteRangeSpec? = nil, ifRange: String? = nil) {
        self.isHead = isHead
        self.isHTTP10 = isHTTP10
        self.keepAlive = keepAlive
        self.range = range
        self.ifRange = ifRange
    }

    /// From a request head: Range and If-Range as RFC 9110 §14 reads them.
    package init(_ head: HTTPRequestHead) {
        // One pass, names told apart by length first (every response; most carry none).
        var rangeValue: String?
        var ifRange: String?
        var preconditions = HTTPHeaders()
        for field in head.headers {
            switch field.name.utf8.count {
            case 5:
                if rangeValue == nil, HTTPHeaders.sameName(field.name, "range") { rangeValue = field.value }
            case 8:
                if ifRange == nil, HTTPHeaders.sameName(field.name, "if-range") {
                    ifRange = field.value
                } else if HTTPHeaders.sameName(field.name, "if-match") {
                    preconditions.add("If-Match", field.value)
                }
            case 13, 17, 19:
                if let name = Preconditions.fields.first(where: { HTTPHeaders.sameName($0, field.name) }) {
                    preconditions.add(name, field.value)
                }
            default:
                break
            }
        }
        var spec: ByteRangeSpec?
        if let rangeValue, let specs = RangeHeaderParser.parse(rangeValue), specs.count == 1 { spec = specs[0] }
        self.init(isHead: head.method == "HEAD", isHTTP10: head.version == .http10, keepAlive: head.keepAlive,
                  range: spec, ifRange: ifRange)
        self.preconditions = preconditions
    }
}

/// The answer's shape (status, body range, framing) for one request of one resource.
/// The proxy and the in-process reader both plan with it, so Range means the same.
package struct ResponsePlan: Equatable, Sendable {
    /// 200, 206 or 416; or a stored other status (`ContentInfo.status`), whole.
    package var status: Int
    /// The body's bytes; upper bound `Int64.max` while the length is unknown.
    package var body: Range<Int64>
    package var totalLength: Int64?
    /// Unknown length to an HTTP/1.1 client: a cut-short body shows as a missing last chunk.
    package var chunked: Bool
    package var keepAlive: Bool
    /// False for HEAD, 416 and empty bodies: the head is the whole answer.
    package var sendsBody: Bool

    package init(_ request: BodyRequest, info: ContentInfo) {
        status = info.status
        totalLength = info.totalLength
        chunked = false
        keepAlive = request.keepAlive
        if status == 204 || status == 304 {
            body = 0..<0  // never a body, nor its framing
        } else if let total = info.totalLength {
            body = 0..<total
            // Range applies to a 200's representation only (RFC 9110 §14.2).
            if status == 200, let spec = request.range, request.ifRange.map({
                IfRange.allowsRange($0, etag: info.etag, lastModified: info.lastModified)
            }) ?? true {
                if let range = spec.resolve(length: total) {
                    status = 206
                    body = range
                } else {
                    status = 416
                    body = 0..<0
                }
            }
        } else if request.rangesOfUnknownLength, let spec = request.range, let open = Self.openRange(spec) {
            status = 206
            body = open
        } else {
            body = 0..<Int64.max
            if request.isHTTP10 { keepAlive = false } else { chunked = true }
        }
        sendsBody = !request.isHead && status != 416 && status != 204 && status != 304 && !body.isEmpty
    }

    /// The bytes `spec` selects before the length is known (nil for a suffix).
    private static func openRange(_ spec: ByteRangeSpec) -> Range<Int64>? {
        switch spec {
        case let .closed(first, last): return first <= last ? first..<(last + 1) : nil
        case let .from(first): return first..<Int64.max
        case .suffix: return nil
        }
    }

    /// Stored fields as head lines, without the plan's own fields and Age.
    package static func replayedLines(_ fields: HTTPHeaders) -> [UInt8] {
        var lines = HeadBuilder(fieldsCapacity: 256)
        for field in fields where !ownFields.contains(field.name.lowercased()) && field.name.lowercased() != "age" {
            lines.add(name: field.name, field.value)
        }
        return lines.bytes
    }

    static let ownFields: Set<String> = [
        "server", "date", "content-type", "accept-ranges", "etag", "last-modified", "content-range",
        "content-length", "transfer-encoding", "connection", "keep-alive",
    ]

    /// The response head, written straight into bytes (a hot path). `middle`:
    /// `middleLines(info)` rendered before (a plain hit serves it all second long).
    package func head(_ info: ContentInfo, date: String, cacheStatus: String? = nil,
                      middle: MiddleLines? = nil) -> [UInt8] {
        var head = HeadBuilder(status: status, capacity: middle.map { $0.bytes.count + 192 } ?? 384)
        // The origin's Server is an end-to-end field: replayed; this proxy is in Via.
        head.add("Server", middle?.server ?? info.headers["Server"] ?? "HTTPCache")
        if let middle, status == 200 || status == 206 {
            if !middle.hasDate { head.add("Date", date) }
            head.append(lines: middle.bytes)
        } else {
            // The stored Date is replayed with an Age (RFC 9111 §4, §5.1).
            head.add("Date", info.headers["Date"] ?? date)
            // A stored 204 or redirect without a type gets none (its fields as the origin sent them).
            Self.writeMiddle(into: &head, info, contentType: status != 416 && (info.status == 200 || info.contentType != nil))
        }
        if let cacheStatus { head.add("Cache-Status", cacheStatus) }
        if let total = totalLength {
            if status == 206 { head.addContentRange(body, total: total) }
            if status == 416 { head.addUnsatisfiedRange(total: total) }
            // A 204 has no body and states no length of one (RFC 9110 §8.6).
            if status != 204 { head.add("Content-Length", decimal: Int64(body.count)) }
        }
        if chunked { head.add("Transfer-Encoding", "chunked") }
        head.add("Connection", keepAlive ? "keep-alive" : "close")
        if status == 416 { head.add("Content-Type", "text/plain") }
        return head.finish()
    }

    /// The lines of a 200 or 206 head that depend on the stored response only, rendered once for many heads.
    package struct MiddleLines: Sendable {
        package let bytes: [UInt8]
        /// False: the head adds the Date of its own second first.
        package let hasDate: Bool
        package let server: String?
    }

    package static func middleLines(_ info: ContentInfo) -> MiddleLines {
        var lines = HeadBuilder(fieldsCapacity: 256 + (info.replayedLines?.count ?? 0))
        let stored = info.headers["Date"]
        if let stored { lines.add("Date", stored) }
        writeMiddle(into: &lines, info, contentType: true)
        return MiddleLines(bytes: lines.bytes, hasDate: stored != nil, server: info.headers["Server"])
    }

    private static func writeMiddle(into head: inout HeadBuilder, _ info: ContentInfo, contentType: Bool) {
        if contentType { head.add("Content-Type", info.contentType ?? "application/octet-stream") }
        if let lines = info.replayedLines {
            head.append(lines: lines)
            if let age = info.age { head.add("Age", decimal: Int64(age)) }
        } else {
            for field in info.headers where !Self.ownFields.contains(field.name.lowercased()) {
                head.add(name: field.name, field.value)
            }
        }
        if info.status == 200 { head.add("Accept-Ranges", "bytes") }
        if let etag = info.etag { head.add("ETag", etag) }
        if let lastModified = info.lastModified { head.add("Last-Modified", lastModified) }
    }
}
