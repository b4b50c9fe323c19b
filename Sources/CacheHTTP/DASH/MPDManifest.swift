package enum MPDTrackKind: Sendable, Equatable {
    case video, audio, text, other
}

/// One resource (or byte range of one) of a representation.
package struct MPDSegment: Sendable, Equatable {
    package var url: String
    package var range: Range<Int64>?
    package var duration: Double = 0  // seconds of media (0 for initialization and index segments)
}

package struct MPDRepresentation: Sendable, Equatable {
    package var id: String
    package var bandwidth: Int
    package var initialization: MPDSegment?
    /// Index segments a player fetches (RepresentationIndex, SegmentURL@index, …).
    package var indexes: [MPDSegment] = []
    package var segments: [MPDSegment] = []
    /// SegmentBase@indexRange: the `sidx` that lists the segments (`DASH.segments(fromIndex:…)`).
    package var segmentIndex: MPDSegment?
    /// The segment after the last a `@duration` template counts: a period duration rounded down
    /// may hide a short last segment, which players fetch until a 404. May not exist.
    package var trailingSegment: MPDSegment?
}

package struct MPDAdaptationSet: Sendable, Equatable {
    package var kind: MPDTrackKind
    package var language: String?
    package var representations: [MPDRepresentation]
}

package struct MPDPeriod: Sendable, Equatable {
    package var start: Double
    package var duration: Double?
    package var adaptationSets: [MPDAdaptationSet]
}

/// An MPD as a preloader reads it: periods, adaptation sets, representations, each with the
/// resources a player would fetch, BaseURLs resolved and templates filled in.
package struct MPDManifest: Sendable, Equatable {
    package var isDynamic: Bool  // `type="dynamic"`: live, segments appear over time
    package var minimumUpdatePeriod: Double?
    /// The longest segment of any representation (seconds), when known.
    package var maxSegmentDuration: Double?
    package var periods: [MPDPeriod]

    /// The most segments a manifest expands to, all representations together: a bound on what
    /// a hostile manifest can make a preload queue.
    package static let segmentLimit = 100_000

    /// `manifestURL`: where it was fetched from (after redirects); `now` (epoch seconds) tells
    /// which segments of a dynamic MPD are available.
    package static func parse<Bytes: Collection<UInt8>>(_ bytes: Bytes, manifestURL: String,
                                                        now: Double = 0) throws(DASHError) -> MPDManifest {
        let root = try bytes.withContiguousBytes { b throws(DASHError) in try XMLElement.parse(b) }
        guard root.name == "MPD" else { throw .notMPD }
        guard OriginURL.parse(manifestURL) != nil else { throw .invalidManifestURL(manifestURL) }
        var reader = MPDReader(root: root, now: now)
        return reader.read(manifestURL: manifestURL)
    }

    /// Reuse time of a dynamic MPD: `minimumUpdatePeriod`, else half the longest segment, else 1 s.
    package var liveReuseMilliseconds: Int64? {
        guard isDynamic else { return nil }
        let seconds = minimumUpdatePeriod ?? maxSegmentDuration.map { $0 / 2 } ?? 1
        return Int64(max(0, min(seconds, 86400)) * 1000)
    }
}

private struct MPDReader {
    let root: XMLElement
    let now: Double
    var maxSegment: Double?
    var budget = MPDManifest.segmentLimit  // segments still allowed (`MPDManifest.segmentLimit` in all)

    var isDynamic: Bool { root["type"] == "dynamic" }

    mutating func read(manifestURL: String) -> MPDManifest {
        let base = Self.resolve(root, against: manifestURL)
        let presentation = root["mediaPresentationDuration"].flatMap(DASH.seconds(ofDuration:))
        let periodElements = root.children("Period")
        var periods: [MPDPeriod] = []
        var previousEnd: Double? = 0
        for (k, element) in periodElements.enumerated() {
            let start = element["start"].flatMap(DASH.seconds(ofDuration:)) ?? previousEnd ?? 0
            var duration = element["duration"].flatMap(DASH.seconds(ofDuration:))
            if duration == nil, k + 1 < periodElements.count,
               let next = periodElements[k + 1]["start"].flatMap(DASH.seconds(ofDuration:)) {
                duration = next - start
            }
            if duration == nil, k + 1 == periodElements.count, let presentation { duration = presentation - start }
            previousEnd = duration.map { start + $0 }
            periods.append(read(period: element, start: start, duration: duration, base: base))
        }
        let declaredMax = root["maxSegmentDuration"].flatMap(DASH.seconds(ofDuration:))
        return MPDManifest(isDynamic: isDynamic,
                           minimumUpdatePeriod: root["minimumUpdatePeriod"].flatMap(DASH.seconds(ofDuration:)),
                           maxSegmentDuration: declaredMax ?? maxSegment, periods: periods)
    }

    /// The element's BaseURL resolved against the parent's; the parent's without one.
    static func resolve(_ element: XMLElement, against parent: String?) -> String? {
        guard let parent else { return nil }
        guard let written = element.child("BaseURL")?.text.trimmingBlanks, !written.isEmpty else { return parent }
        return (try? HLSURIResolver(playlistURL: parent))?.resolve(written)
    }

    mutating func read(period: XMLElement, start: Double, duration: Double?, base: String?) -> MPDPeriod {
        let periodBase = Self.resolve(period, against: base)
        var sets: [MPDAdaptationSet] = []
        for set in period.children("AdaptationSet") {
            let setBase = Self.resolve(set, against: periodBase)
            var representations: [MPDRepresentation] = []
            for representation in set.children("Representation") {
                let chain = [period, set, representation]
                guard let repBase = Self.resolve(representation, against: setBase) else { continue }
                representations.append(read(representation, chain: chain, base: repBase, periodStart: start,
                                            periodDuration: duration))
            }
            sets.append(MPDAdaptationSet(kind: Self.kind(of: set), language: set["lang"], representations: representations))
        }
        return MPDPeriod(start: start, duration: duration, adaptationSets: sets)
    }

    static func kind(of set: XMLElement) -> MPDTrackKind {
        let type = set["contentType"] ?? set["mimeType"] ?? set.child("Representation")?["mimeType"] ?? ""
        if type.hasPrefix("video") { return .video }
        if type.hasPrefix("audio") { return .audio }
        if type.hasPrefix("text") || type.contains("ttml") || type.contains("vtt") { return .text }
        if let contentComponent = set.child("ContentComponent")?["contentType"] {
            return contentComponent == "video" ? .video : contentComponent == "audio" ? .audio : .other
        }
        return .other
    }

    /// The attributes of segment element `name` merged from Period down (lower levels win), and
    /// the levels that have one; nil for none.
    static func merged(_ name: String, _ chain: [XMLElement]) -> (attributes: [String: String], levels: [XMLElement])? {
        let levels = chain.compactMap { $0.child(name) }
        guard !levels.isEmpty else { return nil }
        var attributes: [String: String] = [:]
        for level in levels { attributes.merge(level.attributes) { _, new in new } }
        return (attributes, levels)
    }

    static func deepest(_ name: String, in levels: [XMLElement]) -> XMLElement? {
        levels.reversed().lazy.compactMap { $0.child(name) }.first
    }

    mutating func read(_ element: XMLElement, chain: [XMLElement], base: String, periodStart: Double,
                       periodDuration: Double?) -> MPDRepresentation {
        let id = element["id"] ?? ""
        let bandwidth = Int(element["bandwidth"] ?? "") ?? 0
        var out = MPDRepresentation(id: id, bandwidth: bandwidth)
        let resolver = try? HLSURIResolver(playlistURL: base)
        func url(_ written: String?) -> String? {
            guard let written, !written.isEmpty else { return base }
            return resolver?.resolve(written)
        }
        func fill(_ template: String?, number: Int64? = nil, time: Int64? = nil) -> String? {
            template.flatMap { DASH.fill(template: $0, representationID: id, bandwidth: bandwidth, number: number, time: time) }
                .flatMap { resolver?.resolve($0) }
        }
        if let (attributes, levels) = Self.merged("SegmentTemplate", chain) {
            let timescale = DASH.positive(attributes["timescale"]) ?? 1
            let startNumber = DASH.count(attributes["startNumber"]) ?? 1
            let endNumber = DASH.count(attributes["endNumber"])
            if let initialization = fill(attributes["initialization"]) {
                out.initialization = MPDSegment(url: initialization)
            }
            let times = timeline(Self.deepest("SegmentTimeline", in: levels), attributes: attributes,
                                 timescale: timescale, periodStart: periodStart, periodDuration: periodDuration)
            if !isDynamic, endNumber == nil, Self.deepest("SegmentTimeline", in: levels) == nil,
               let d = DASH.positive(attributes["duration"]), !times.isEmpty, times.count < MPDManifest.segmentLimit {
                let number = startNumber + Int64(times.count)
                out.trailingSegment = fill(attributes["media"], number: number, time: DASH.clamped(Double(times.count) * d))
                    .map { MPDSegment(url: $0, duration: 0) }
            }
            for slot in times {
                let number = startNumber + slot.index
                if let endNumber, number > endNumber { break }
                if let media = fill(attributes["media"], number: number, time: slot.time) {
                    out.segments.append(MPDSegment(url: media, duration: slot.duration / timescale))
                }
                if let index = fill(attributes["index"], number: number, time: slot.time),
                   !out.indexes.contains(where: { $0.url == index }) {
                    out.indexes.append(MPDSegment(url: index))
                }
            }
            noteMax(out.segments)
            return out
        }
        func initializationAndIndex(_ levels: [XMLElement]) {
            if let initialization = Self.deepest("Initialization", in: levels) {
                out.initialization = url(initialization["sourceURL"]).map {
                    MPDSegment(url: $0, range: initialization["range"].flatMap(DASH.byteRange))
                }
            }
            if let index = Self.deepest("RepresentationIndex", in: levels), let indexURL = url(index["sourceURL"]) {
                out.indexes.append(MPDSegment(url: indexURL, range: index["range"].flatMap(DASH.byteRange)))
            }
        }
        if let (attributes, levels) = Self.merged("SegmentList", chain) {
            let timescale = DASH.positive(attributes["timescale"]) ?? 1
            let urls = levels.last?.children("SegmentURL") ?? []
            let slots = timeline(Self.deepest("SegmentTimeline", in: levels), attributes: attributes,
                                 timescale: timescale, periodStart: periodStart, periodDuration: nil,
                                 count: urls.count)
            initializationAndIndex(levels)
            for (k, segment) in urls.prefix(budget).enumerated() {
                let seconds = k < slots.count ? slots[k].duration / timescale : 0
                if let media = url(segment["media"]) {
                    out.segments.append(MPDSegment(url: media, range: segment["mediaRange"].flatMap(DASH.byteRange),
                                                   duration: seconds))
                }
                if segment["index"] != nil || segment["indexRange"] != nil, let index = url(segment["index"]) {
                    let range = segment["indexRange"].flatMap(DASH.byteRange)
                    // An index inside the media range is fetched with it.
                    if let range, let media = segment["mediaRange"].flatMap(DASH.byteRange), segment["index"] == nil,
                       media.contains(range.lowerBound) { continue }
                    out.indexes.append(MPDSegment(url: index, range: range))
                }
            }
            noteMax(out.segments)
            return out
        }
        if let (attributes, levels) = Self.merged("SegmentBase", chain) {
            initializationAndIndex(levels)
            if let range = attributes["indexRange"].flatMap(DASH.byteRange) {
                out.segmentIndex = MPDSegment(url: base, range: range)
                return out
            }
        }
        // No segment information: the BaseURL is the one segment.
        out.segments = [MPDSegment(url: base, duration: periodDuration ?? 0)]
        return out
    }

    private mutating func noteMax(_ segments: [MPDSegment]) {
        budget = max(0, budget - segments.count)
        for s in segments where s.duration > (maxSegment ?? 0) { maxSegment = s.duration }
    }

    /// Times and durations (timescale units) from a SegmentTimeline (`r="-1"` repeats to the next
    /// `S`, the period's end or, live, now), else `@duration` (to `count`, the end or now).
    func timeline(_ timeline: XMLElement?, attributes: [String: String], timescale: Double, periodStart: Double,
                  periodDuration: Double?, count: Int? = nil) -> [(index: Int64, time: Int64, duration: Double)] {
        let limit = budget
        let available = availableUntil(periodStart: periodStart)
        let periodEnd = periodDuration.map { DASH.clamped($0 * timescale) }
        var slots: [(index: Int64, time: Int64, duration: Double)] = []
        if let timeline {
            let entries = timeline.children("S")
            var t: Int64 = 0
            for (k, s) in entries.enumerated() {
                if let start = DASH.count(s["t"]) { t = start }
                guard let d = DASH.count(s["d"]), d > 0 else { break }
                var repeats = max(-1, min(DASH.valueLimit, Int64(s["r"] ?? "") ?? 0))
                if repeats < 0 {
                    var end: Int64?
                    if k + 1 < entries.count { end = DASH.count(entries[k + 1]["t"]) }
                    if end == nil, let periodEnd { end = periodEnd }
                    if end == nil, let available { end = DASH.clamped(available * timescale) }
                    guard let end else { repeats = 0; break }
                    repeats = max(0, (end - t + d - 1) / d - 1)
                }
                var r: Int64 = 0
                while r <= repeats, slots.count < limit, t <= DASH.valueLimit {
                    if let available, Double(t + d) / timescale > available { return slots }
                    if let periodEnd, t >= periodEnd { return slots }
                    slots.append((Int64(slots.count), t, Double(d)))
                    t += d
                    r += 1
                }
            }
            return slots
        }
        guard let d = DASH.positive(attributes["duration"]) else { return [] }
        var total = count ?? periodDuration.map { Self.segmentCount(($0 * timescale / d).rounded(.up), limit: limit) }
            ?? available.map { Self.segmentCount(($0 * timescale / d).rounded(.down), limit: limit) } ?? 0
        var first = 0
        if let available, let depth = root["timeShiftBufferDepth"].flatMap(DASH.seconds(ofDuration:)) {
            // Live: what is still in the time-shift window.
            first = Self.segmentCount(((available - depth) * timescale / d).rounded(.down), limit: limit)
        }
        total = min(total, limit)
        guard first < total else { return [] }
        return (first..<total).map { (Int64($0), DASH.clamped(Double($0) * d), d) }
    }

    /// 0 to `limit`; NaN: 0.
    static func segmentCount(_ x: Double, limit: Int) -> Int {
        x.isNaN ? 0 : Int(max(0, min(Double(limit), x)))
    }

    /// Seconds of the period available now; nil when static.
    func availableUntil(periodStart: Double) -> Double? {
        guard isDynamic else { return nil }
        guard let start = root["availabilityStartTime"].flatMap(DASH.seconds(ofDateTime:)) else { return 0 }
        return max(0, now - start - periodStart)
    }
}
