// Rewriting every URI of a playlist and nothing else, in one pass: only URI bytes are
// replaced, so line ends, unknown tags, attribute order, quoting, blanks and comments survive.

extension HLS {
    /// Which attributes of which tag hold URIs.
    static func uriAttributes(ofTag tag: String) -> [(name: StaticString, kind: HLSURIKind)]? {
        switch tag {
        case "EXT-X-KEY": return [("URI", .key)]
        case "EXT-X-SESSION-KEY": return [("URI", .sessionKey)]
        case "EXT-X-MAP": return [("URI", .map)]
        case "EXT-X-MEDIA": return [("URI", .rendition)]
        case "EXT-X-I-FRAME-STREAM-INF": return [("URI", .iFrameStream)]
        case "EXT-X-SESSION-DATA": return [("URI", .sessionData)]
        case "EXT-X-PART": return [("URI", .part)]
        case "EXT-X-PRELOAD-HINT": return [("URI", .preloadHint)]
        case "EXT-X-RENDITION-REPORT": return [("URI", .renditionReport)]
        case "EXT-X-CONTENT-STEERING": return [("SERVER-URI", .steeringManifest)]
        case "EXT-X-DATERANGE": return [("X-ASSET-URI", .interstitialAsset), ("X-ASSET-LIST", .interstitialAssetList)]
        default: return nil
        }
    }

    /// Each URI (URI lines and the `uriAttributes`) is resolved against `playlistURL`
    /// (RFC 3986, query kept, fragment dropped) and passed to `map`, whose result replaces it;
    /// nil keeps it. Not http(s) (`skd://`, `data:`), an EXT-X-DEFINE variable (`{$name}`, the
    /// client's to substitute) or unresolvable: kept, never mapped. Throws, never rewriting
    /// partly, on a missing `#EXTM3U` (empty or binary input), an unusable `playlistURL`, a
    /// malformed attribute list of those tags, or a mapped value that cannot stand there.
    package static func rewrite<Bytes: Collection<UInt8>>(
        _ playlist: Bytes, playlistURL: String, map: (_ absoluteURI: String, _ kind: HLSURIKind) -> String?
    ) throws(HLSError) -> [UInt8] {
        try rewrite(playlist, playlistURL: playlistURL) { absolute, _, kind in map(absolute, kind) }
    }

    /// The mapping also sees the URI as written, to keep relative URIs.
    package static func rewrite<Bytes: Collection<UInt8>>(
        _ playlist: Bytes, playlistURL: String,
        map: (_ absoluteURI: String, _ written: UnsafeBufferPointer<UInt8>, _ kind: HLSURIKind) -> String?
    ) throws(HLSError) -> [UInt8] {
        let resolver = try HLSURIResolver(playlistURL: playlistURL)
        return try playlist.withContiguousBytes { b throws(HLSError) in try rewrite(b, resolver, map) }
    }

    private static func rewrite(
        _ b: UnsafeBufferPointer<UInt8>, _ resolver: HLSURIResolver,
        _ map: (String, UnsafeBufferPointer<UInt8>, HLSURIKind) -> String?
    ) throws(HLSError) -> [UInt8] {
        guard let start = HLSBytes.headerStart(b) else { throw .missingHeader }
        var out: [UInt8] = []
        out.reserveCapacity(b.count + b.count / 2)
        var copied = 0

        func replace(_ r: Range<Int>, kind: HLSURIKind, context: ReplacementContext) throws(HLSError) {
            let written = UnsafeBufferPointer(rebasing: b[r])
            guard let absolute = resolver.resolve(bytes: written),
                  let mapped = map(absolute, written, kind) else { return }
            guard context.accepts(mapped) else { throw .unusableReplacement(mapped) }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: b[copied..<r.lowerBound]))
            out.append(contentsOf: mapped.utf8)
            copied = r.upperBound
        }

        var scanner = HLSLineScanner(b, from: start)
        var afterStreamInf = false
        while let line = scanner.next() {
            switch HLSLineKind(b, line.content) {
            case .blank, .comment:
                continue
            case .uri(let r):
                try replace(r, kind: afterStreamInf ? .variant : .segment, context: .line)
                afterStreamInf = false
            case .tag(let nameRange, let value):
                if HLSBytes.equals(b, nameRange, "EXT-X-STREAM-INF") { afterStreamInf = true; continue }
                // Cheap filter before making a String of the name: every URI tag is "EXT-X-…".
                guard let value, HLSBytes.hasPrefix(b, nameRange, "EXT-X-") else { continue }
                let tag = HLSBytes.string(b, nameRange)
                guard let wanted = uriAttributes(ofTag: tag) else { continue }
                for a in try HLSAttributeValues(b, value, tag: tag, line: line.number, resolver: resolver).attributes {
                    guard let match = wanted.first(where: { HLSBytes.equals(b, a.name, $0.name) }) else { continue }
                    try replace(a.value, kind: match.kind, context: a.isQuoted ? .quoted : .unquoted)
                }
            }
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: b[copied...]))
        return out
    }
}

private enum ReplacementContext {
    case line, quoted, unquoted

    func accepts(_ s: String) -> Bool {
        var copy = s
        return copy.withUTF8(accepts)
    }

    private func accepts(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        for c in bytes {
            switch c {
            case ASCII.cr, ASCII.lf: return false
            case UInt8(ascii: "\""): if self != .line { return false }
            case ASCII.comma, ASCII.sp, ASCII.ht: if self == .unquoted { return false }
            default: continue
            }
        }
        return !bytes.isEmpty
    }
}
