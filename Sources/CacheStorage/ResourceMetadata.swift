/// What is known about one cached resource, as persisted next to its data file.
///
/// Stored as a small line-oriented text file (fast to parse at start-up, easy
/// to read by hand). Only byte ranges that were made durable are listed.
package struct ResourceMetadata: Sendable, Equatable {
    package var url: String
    package var totalLength: Int64?
    package var contentType: String?
    package var etag: String?
    package var lastModified: String?
    package var ranges: RangeSet
    /// Milliseconds since 1970 of the last use (drives LRU).
    package var lastAccess: Int64
    /// Name of the data file in the resource folder. A new version gets a new
    /// name, so metadata of an old version can never claim bytes of a new one.
    package var dataName: String = "data"
    /// The origin's response head as a shared cache keeps it (RFC 9111 §3),
    /// nil in metadata written before heads were stored.
    package var head: StoredResponseHead?
    /// Set while a preload pinned the resource: the URL that preload started
    /// from (`unpin` of that URL releases all of it). Pinned resources are
    /// never evicted by the size limit. Absent in files of older versions.
    package var pin: String?

    package init(url: String, totalLength: Int64? = nil, contentType: String? = nil, etag: String? = nil,
                 lastModified: String? = nil, ranges: RangeSet = RangeSet(), lastAccess: Int64 = 0) {
        self.url = url
        self.totalLength = totalLength
        self.contentType = contentType
        self.etag = etag
        self.lastModified = lastModified
        self.ranges = ranges
        self.lastAccess = lastAccess
    }

    package static let magic = "httpcache-meta 1"

    /// True when every byte of a resource of known length is cached.
    package var isComplete: Bool {
        guard let totalLength else { return false }
        return totalLength == 0 || ranges.covers(0..<totalLength)
    }

    package func encoded() -> String {
        var lines = [Self.magic, "url \(url)"]
        if let totalLength { lines.append("length \(totalLength)") }
        if let contentType { lines.append("type \(contentType)") }
        if let etag { lines.append("etag \(etag)") }
        if let lastModified { lines.append("last-modified \(lastModified)") }
        if dataName != "data" { lines.append("file \(dataName)") }
        if let head { lines += head.encodedLines() }
        if let pin { lines.append("pin \(pin)") }
        lines.append("ranges \(ranges)")
        lines.append("access \(lastAccess)")
        return lines.joined(separator: "\n") + "\n"
    }

    /// Parses `encoded()`; nil when the text is not a complete metadata file.
    package init?(decoding text: String) {
        // Split at bytes, not Characters: "\r\n" is one Character, and so is a
        // space followed by a combining mark, so a value ending in CR or
        // starting with a combining mark would not read back as written.
        var lines = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)[...]
        guard let first = lines.first, first.elementsEqual(Self.magic.utf8) else { return nil }
        lines = lines.dropFirst()
        var url: String?
        var ranges: RangeSet?
        var access: Int64?
        self.init(url: "")
        for line in lines {
            let space = line.firstIndex(of: UInt8(ascii: " ")) ?? line.endIndex
            let key = Substring(line[..<space])
            let value = Substring(line[space...].dropFirst())
            switch key {
            case "url": url = String(value)
            case "length":
                guard let length = Int64(value), length >= 0 else { return nil }
                totalLength = length
            case "type": contentType = String(value)
            case "etag": etag = String(value)
            case "last-modified": lastModified = String(value)
            case "ranges": ranges = RangeSet(parsing: value)
                if ranges == nil { return nil }
            case "access": access = Int64(value)
            case "status", "request-time", "response-time", "header", "vary", "vary-key", "invalidated":
                var stored = head ?? StoredResponseHead()
                guard stored.decode(key: key, value: value) else { return nil }
                head = stored
            case "pin": pin = value.isEmpty ? nil : String(value)
            case "file":
                guard !value.isEmpty, !value.contains("/"), value != "meta" else { return nil }
                dataName = String(value)
            default: continue  // unknown keys from newer versions are ignored
            }
        }
        guard let url, !url.isEmpty, let ranges, let access else { return nil }
        if let head, head.status == 0 { return nil }
        if let totalLength, let last = ranges.ranges.last, last.upperBound > totalLength { return nil }
        self.url = url
        self.ranges = ranges
        self.lastAccess = access
    }
}
