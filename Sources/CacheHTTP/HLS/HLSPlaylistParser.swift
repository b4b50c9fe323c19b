/// A playlist as values for a preloader and live handling. Strict where a wrong answer would
/// fetch wrong bytes (byte ranges, keys, required attributes); unknown tags are ignored, as
/// clients must (RFC 8216bis §6.3.1).
extension HLSPlaylist {
    /// URIs resolve against `playlistURL` (after redirects), but for not http(s) ones. Multivariant
    /// with EXT-X-STREAM-INF, -I-FRAME-STREAM-INF or -MEDIA, else media (needs -TARGETDURATION).
    package static func parse<Bytes: Collection<UInt8>>(
        _ playlist: Bytes, playlistURL: String
    ) throws(HLSError) -> HLSPlaylist {
        let resolver = try HLSURIResolver(playlistURL: playlistURL)
        return try playlist.withContiguousBytes { b throws(HLSError) in try parse(b, resolver) }
    }

    private static func parse(_ b: UnsafeBufferPointer<UInt8>, _ resolver: HLSURIResolver) throws(HLSError) -> HLSPlaylist {
        guard let start = HLSBytes.headerStart(b) else { throw .missingHeader }
        var state = HLSParseState(bytes: b, resolver: resolver)
        var scanner = HLSLineScanner(b, from: start)
        _ = scanner.next() // the header
        while let line = scanner.next() {
            switch HLSLineKind(b, line.content) {
            case .blank, .comment: continue
            case .uri(let r): try state.uriLine(HLSBytes.string(b, r), line: line.number)
            case .tag(let name, let value): try state.tag(HLSBytes.string(b, name), value, line: line.number)
            }
        }
        return try state.finish()
    }
}

private struct HLSParseState {
    let bytes: UnsafeBufferPointer<UInt8>
    let resolver: HLSURIResolver

    var firstMasterTagLine: Int?
    var firstMediaTagLine: Int?

    // Multivariant.
    var master = HLSMasterPlaylist()
    var pendingVariant: (variant: HLSVariant, line: Int)?

    // Media.
    var media = HLSMediaPlaylist(targetDuration: 0)
    var targetDuration: Int?
    var skippedSegments = 0
    var pendingSegment: (duration: Double, title: String?, line: Int)?
    var pendingByteRange: (length: Int64, offset: Int64?, line: Int)?
    var discontinuity = false
    var gap = false
    var keys: [HLSKey] = []
    var map: HLSMap?
    var parts: [HLSPart] = []
    /// Where the last segment's (or part's) sub-range ended, for omitted offsets.
    var lastSegmentRange: (uri: String, end: Int64)?
    var lastPartRange: (uri: String, end: Int64)?

    func attributes(_ value: Range<Int>?, _ tag: String, _ line: Int) throws(HLSError) -> HLSAttributeValues {
        try HLSAttributeValues(bytes, value, tag: tag, line: line, resolver: resolver)
    }

    func plain(_ value: Range<Int>?, _ tag: String, _ line: Int) throws(HLSError) -> Range<Int> {
        guard let value else { throw .invalidValue(line: line, tag: tag, attribute: nil) }
        return value
    }

    func integerValue(_ value: Range<Int>?, _ tag: String, _ line: Int) throws(HLSError) -> Int {
        guard let v = HLSBytes.integer(bytes, try plain(value, tag, line)) else {
            throw .invalidValue(line: line, tag: tag, attribute: nil)
        }
        return Int(v)
    }

    mutating func sawMasterTag(_ line: Int) throws(HLSError) {
        if firstMediaTagLine != nil { throw .mixedPlaylist(line: line) }
        if firstMasterTagLine == nil { firstMasterTagLine = line }
    }

    mutating func sawMediaTag(_ line: Int) throws(HLSError) {
        if firstMasterTagLine != nil { throw .mixedPlaylist(line: line) }
        if firstMediaTagLine == nil { firstMediaTagLine = line }
    }

    mutating func tag(_ tag: String, _ value: Range<Int>?, line: Int) throws(HLSError) {
        switch tag {
        case "EXT-X-STREAM-INF":
            try sawMasterTag(line)
            if let pending = pendingVariant { throw .missingURI(line: pending.line) }
            let a = try attributes(value, tag, line)
            let variant = HLSVariant(
                uri: "", bandwidth: Int(try a.requiredInteger("BANDWIDTH")),
                averageBandwidth: try a.integer("AVERAGE-BANDWIDTH").map(Int.init),
                resolution: try a.resolution("RESOLUTION"), codecs: a.string("CODECS"),
                frameRate: try a.decimal("FRAME-RATE"), audioGroup: a.string("AUDIO"),
                videoGroup: a.string("VIDEO"), subtitlesGroup: a.string("SUBTITLES"),
                closedCaptionsGroup: closedCaptions(a))
            pendingVariant = (variant, line)
        case "EXT-X-I-FRAME-STREAM-INF":
            try sawMasterTag(line)
            let a = try attributes(value, tag, line)
            master.iFrameStreams.append(HLSIFrameStream(
                uri: try a.requiredURI("URI"), bandwidth: Int(try a.requiredInteger("BANDWIDTH")),
                averageBandwidth: try a.integer("AVERAGE-BANDWIDTH").map(Int.init),
                resolution: try a.resolution("RESOLUTION"), codecs: a.string("CODECS"),
                videoGroup: a.string("VIDEO")))
        case "EXT-X-MEDIA":
            try sawMasterTag(line)
            let a = try attributes(value, tag, line)
            guard let type = HLSRenditionType(rawValue: try a.required("TYPE")) else { throw a.invalid("TYPE") }
            master.renditions.append(HLSRendition(
                type: type, groupID: try a.required("GROUP-ID"), name: try a.required("NAME"),
                language: a.string("LANGUAGE"), uri: a.uri("URI"),
                isDefault: try a.flag("DEFAULT"), autoselect: try a.flag("AUTOSELECT")))
        case "EXT-X-SESSION-KEY":
            master.sessionKeys.append(try key(attributes(value, tag, line)))
        case "EXT-X-CONTENT-STEERING":
            let a = try attributes(value, tag, line)
            master.contentSteering = HLSContentSteering(
                serverURI: try a.requiredURI("SERVER-URI"), pathwayID: a.string("PATHWAY-ID"))
        case "EXT-X-TARGETDURATION":
            try sawMediaTag(line)
            targetDuration = try integerValue(value, tag, line)
        case "EXT-X-MEDIA-SEQUENCE":
            media.mediaSequence = try integerValue(value, tag, line)
        case "EXT-X-DISCONTINUITY-SEQUENCE":
            media.discontinuitySequence = try integerValue(value, tag, line)
        case "EXT-X-PLAYLIST-TYPE":
            let v = try plain(value, tag, line)
            if HLSBytes.equals(bytes, v, "VOD") { media.playlistType = .vod }
            else if HLSBytes.equals(bytes, v, "EVENT") { media.playlistType = .event }
            else { throw .invalidValue(line: line, tag: tag, attribute: nil) }
        case "EXT-X-ENDLIST":
            media.hasEndList = true
        case "EXT-X-PART-INF":
            media.partTargetDuration = try attributes(value, tag, line).decimal("PART-TARGET")
        case "EXT-X-SKIP":
            // A delta update: that many segments were left out before the first one listed.
            skippedSegments = Int(try attributes(value, tag, line).requiredInteger("SKIPPED-SEGMENTS"))
        case "EXTINF":
            try sawMediaTag(line)
            if let pending = pendingSegment { throw .missingURI(line: pending.line) }
            let v = try plain(value, tag, line)
            let comma = v.first { bytes[$0] == ASCII.comma } ?? v.upperBound
            guard let duration = HLSBytes.decimal(bytes, HLSBytes.trimmed(bytes, v.lowerBound..<comma)) else {
                throw .invalidValue(line: line, tag: tag, attribute: nil)
            }
            let title = comma < v.upperBound ? HLSBytes.string(bytes, (comma + 1)..<v.upperBound) : ""
            pendingSegment = (duration, title.isEmpty ? nil : title, line)
        case "EXT-X-BYTERANGE":
            guard let r = HLSBytes.byteRange(bytes, try plain(value, tag, line)) else {
                throw .invalidValue(line: line, tag: tag, attribute: nil)
            }
            pendingByteRange = (r.length, r.offset, line)
        case "EXT-X-DISCONTINUITY":
            discontinuity = true
        case "EXT-X-GAP":
            gap = true
        case "EXT-X-KEY":
            let k = try key(attributes(value, tag, line))
            if k.method == .none {
                keys = [k]
            } else {
                // One key per KEYFORMAT is in effect; a new one replaces its own format only.
                keys.removeAll { $0.method == .none || $0.keyFormat == k.keyFormat }
                keys.append(k)
            }
        case "EXT-X-MAP":
            let a = try attributes(value, tag, line)
            let uri = try a.requiredURI("URI")
            let range = try a.byteRange("BYTERANGE").map { HLSByteRange(offset: $0.offset ?? 0, length: $0.length) }
            map = HLSMap(uri: uri, byteRange: range)
        case "EXT-X-PART":
            let a = try attributes(value, tag, line)
            let uri = try a.requiredURI("URI")
            guard let duration = try a.decimal("DURATION") else { throw a.missing("DURATION") }
            let r = try a.byteRange("BYTERANGE")
            let range = try Self.subRange(r?.length, r?.offset, uri: uri, after: &lastPartRange, line: line)
            parts.append(HLSPart(uri: uri, duration: duration, byteRange: range,
                                 isIndependent: try a.flag("INDEPENDENT"), isGap: try a.flag("GAP")))
        case "EXT-X-PRELOAD-HINT":
            let a = try attributes(value, tag, line)
            let type: HLSPreloadHintType
            switch try a.required("TYPE") {
            case "PART": type = .part
            case "MAP": type = .map
            case let other: type = .other(other)
            }
            media.preloadHints.append(HLSPreloadHint(
                type: type, uri: try a.requiredURI("URI"), byteRangeStart: try a.integer("BYTERANGE-START") ?? 0,
                byteRangeLength: try a.integer("BYTERANGE-LENGTH")))
        default:
            return
        }
    }

    func closedCaptions(_ a: HLSAttributeValues) -> String? {
        // CLOSED-CAPTIONS=NONE (unquoted) means none; a quoted value is a group.
        guard let attribute = a.attributes.first(where: { HLSBytes.equals(bytes, $0.name, "CLOSED-CAPTIONS") }),
              attribute.isQuoted else { return nil }
        return HLSBytes.string(bytes, attribute.value)
    }

    func key(_ a: HLSAttributeValues) throws(HLSError) -> HLSKey {
        let method = HLSKeyMethod(try a.required("METHOD"))
        guard method != .none else { return HLSKey(method: .none) }
        var iv: [UInt8]?
        if let r = a.range("IV") {
            guard let v = HLSBytes.iv(bytes, r) else { throw a.invalid("IV") }
            iv = v
        }
        return HLSKey(method: method, uri: try a.requiredURI("URI"), iv: iv,
                      keyFormat: a.string("KEYFORMAT") ?? "identity",
                      keyFormatVersions: a.string("KEYFORMATVERSIONS"))
    }

    /// An omitted offset is where `last`, of the same resource, ended; `last` becomes this one.
    static func subRange(_ length: Int64?, _ offset: Int64?, uri: String, after last: inout (uri: String, end: Int64)?,
                         line: Int) throws(HLSError) -> HLSByteRange? {
        guard let length else {
            last = nil
            return nil
        }
        let previousEnd = last.flatMap { $0.uri == uri && $0.end <= Int64.max - length ? $0.end : nil }
        guard let start = offset ?? previousEnd else { throw .byteRangeWithoutOffset(line: line) }
        let range = HLSByteRange(offset: start, length: length)
        last = (uri, range.range.upperBound)
        return range
    }

    mutating func uriLine(_ written: String, line: Int) throws(HLSError) {
        let uri = resolver.resolve(written) ?? written
        if var pending = pendingVariant {
            pending.variant.uri = uri
            master.variants.append(pending.variant)
            pendingVariant = nil
            return
        }
        guard let pending = pendingSegment else {
            throw .invalidValue(line: line, tag: firstMasterTagLine != nil ? "EXT-X-STREAM-INF" : "EXTINF",
                                attribute: nil)
        }
        let r = pendingByteRange
        let range = try Self.subRange(r?.length, r?.offset, uri: uri, after: &lastSegmentRange, line: r?.line ?? line)
        media.segments.append(HLSSegment(
            uri: uri, duration: pending.duration, title: pending.title,
            mediaSequence: 0, // numbered in finish(), once EXT-X-MEDIA-SEQUENCE is surely known
            byteRange: range, keys: keys, map: map, discontinuity: discontinuity, isGap: gap, parts: parts))
        pendingSegment = nil
        pendingByteRange = nil
        discontinuity = false
        gap = false
        parts = []
    }

    mutating func finish() throws(HLSError) -> HLSPlaylist {
        if let pending = pendingVariant { throw .missingURI(line: pending.line) }
        if let pending = pendingSegment { throw .missingURI(line: pending.line) }
        if firstMasterTagLine != nil { return .master(master) }
        guard let targetDuration else { throw .missingTargetDuration }
        media.targetDuration = targetDuration
        // Wrapping: absurd sequence numbers must not trap.
        let first = media.mediaSequence &+ skippedSegments
        for i in media.segments.indices { media.segments[i].mediaSequence = first &+ i }
        media.trailingParts = parts
        return .media(media)
    }
}
