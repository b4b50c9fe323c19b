extension DASH {
    /// By `application/dash+xml` (any case, parameters ignored); for a generic type or none, by
    /// the path's `.mpd` or an `MPD` root element in the first bytes; other types: no.
    package static func isManifest<Prefix: Collection<UInt8>>(
        contentType: String?, path: String, bodyPrefix: Prefix
    ) -> Bool {
        switch contentType.map(bareMediaType) ?? "" {
        case "application/dash+xml": return true
        case "", "application/octet-stream", "binary/octet-stream", "text/plain", "application/xml", "text/xml":
            return ASCII.pathEnds(path, with: ".mpd") || startsWithMPDRoot(bodyPrefix)
        default: return false
        }
    }

    /// `<MPD` (any namespace prefix) after an optional BOM, XML declaration, comments and blanks.
    package static func startsWithMPDRoot<Prefix: Collection<UInt8>>(_ bytes: Prefix) -> Bool {
        // Every caller's bytes are contiguous: no generic iteration on an entry's first use.
        bytes.withContiguousStorageIfAvailable(startsWithMPDRoot) ?? startsWithMPDRoot(Array(bytes.prefix(4096)))
    }

    private static func startsWithMPDRoot(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        // Most bodies are ruled out by their first byte, before any copy.
        let start = textStart(bytes, skippingBlanks: true)
        guard start < bytes.count, bytes[start] == UInt8(ascii: "<") else { return false }
        var body = Array(bytes.prefix(4096))[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
        while true {
            while let c = body.first, XMLText.isBlank(c) { body = body.dropFirst() }
            if body.starts(with: "<?".utf8) || body.starts(with: "<!".utf8) {
                let end: [UInt8] = body.starts(with: "<!--".utf8) ? Array("-->".utf8) : Array(">".utf8)
                guard let close = body.firstRange(of: end)?.lowerBound else { return false }
                body = body[(close + end.count)...]
                continue
            }
            guard body.first == UInt8(ascii: "<") else { return false }
            let name = body.dropFirst().prefix { c in
                !(XMLText.isBlank(c) || c == UInt8(ascii: ">") || c == UInt8(ascii: "/"))
            }
            let local = name.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false).last ?? name
            return local.elementsEqual("MPD".utf8)
        }
    }
}
