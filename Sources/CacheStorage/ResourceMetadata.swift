/// What is known about one cached resource, persisted with its data file as small line-oriented
/// text (fast to parse, easy to read by hand). Only durable byte ranges are listed.
package struct ResourceMetadata: Sendable, Equatable {
    package var url: String
    package var totalLength: Int64?
    package var contentType: String?
    package var etag: String?
    package var lastModified: String?
    package var ranges: RangeSet
    package var lastAccess: Int64  // milliseconds since 1970 of the last use (LRU)
    /// The data file's name: a new version gets a new one, so old metadata never claims its bytes.
    package var dataName: String = "data"
    /// The origin's response head as a shared cache keeps it (RFC 9111 §3); nil in older metadata.
    package var head: StoredResponseHead?
    /// What pins it against eviction (PinHolders: a preload's URL, which `unpin` releases; downloads' tags).
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
        var text = text
        guard let decoded = text.withUTF8({ Self.decode(MetadataBytes($0)) }) else { return nil }
        self = decoded
    }

    /// Parses `encoded()` from stored bytes (a `.meta` file, an attribute).
    package init?(decoding bytes: [UInt8]) {
        guard let decoded = bytes.withUnsafeBufferPointer({ Self.decode(MetadataBytes($0)) }) else { return nil }
        self = decoded
    }

    /// On bytes: "\r\n", or a space and a combining mark, are one Character (such values would not
    /// read back), and Substrings cost ~100,000 instructions an entry's first use.
    private static func decode(_ text: MetadataBytes) -> ResourceMetadata? {
        var lines = text.lines()
        guard let first = lines.next(), first.equalsText(magic) else { return nil }
        var url: String?
        var ranges: RangeSet?
        var access: Int64?
        var m = ResourceMetadata(url: "")
        while let line = lines.next() {
            let (key, value) = line.splitKey()
            switch key.count {
            case 3 where key.equals("url"): url = value.string
            case 6 where key.equals("length"):
                guard let length = value.int64, length >= 0 else { return nil }
                m.totalLength = length
            case 4 where key.equals("type"): m.contentType = value.string
            case 4 where key.equals("etag"): m.etag = value.string
            case 13 where key.equals("last-modified"): m.lastModified = value.string
            case 6 where key.equals("ranges"):
                guard let parsed = RangeSet(parsing: value) else { return nil }
                ranges = parsed
            case 6 where key.equals("access"): access = value.int64
            case 3 where key.equals("pin"): m.pin = value.isEmpty ? nil : value.string
            case 4 where key.equals("file"):
                guard !value.isEmpty, !value.contains(UInt8(ascii: "/")), !value.equals("meta") else { return nil }
                m.dataName = value.string
            default:
                guard let field = StoredResponseHead.Line(key) else { continue }  // unknown keys of newer versions
                var stored = m.head ?? StoredResponseHead()
                guard stored.decode(field, value: value) else { return nil }
                m.head = stored
            }
        }
        guard let url, !url.isEmpty, let ranges, let access else { return nil }
        if let head = m.head, head.status == 0 { return nil }
        if let totalLength = m.totalLength, let last = ranges.ranges.last, last.upperBound > totalLength { return nil }
        m.url = url
        m.ranges = ranges
        m.lastAccess = access
        return m
    }
}
