// What prefetching knows of a title: each rendition (an HLS media playlist, a DASH
// representation) as its segments' URLs in order, with the keys and init sections each
// needs. Byte-range segments are left out: a URL does not tell them apart.

import CacheHTTP

/// A resource a prefetch fetches: a segment, or a key or init section one needs.
package struct PrefetchResource: Sendable, Hashable {
    package var url: String
    /// Bytes of it (half-open); nil: all of it.
    package var range: Range<Int64>?
}

/// A media segment, with the keys and init section it needs.
package struct PrefetchSegment: Sendable, Equatable {
    package var url: String
    package var needs: [PrefetchResource] = []
}

/// A group's renditions are alternatives (another's segment is a quality switch); a title shares the limit.
package struct PrefetchFamily: Sendable, Equatable {
    package var group: String
    package var title: String
}

package struct PrefetchRendition: Sendable, Equatable {
    /// The media playlist's URL, or the MPD's with its period, set and representation.
    package var id: String
    package var family: PrefetchFamily
    /// A live playlist or dynamic MPD: read again as it grows.
    package var isLive: Bool
    package var segments: [PrefetchSegment]

    /// `family` as its master said (nil: a playlist played alone, its own group and title).
    package static func hls(_ media: HLSMediaPlaylist, url: String, family: PrefetchFamily?) -> PrefetchRendition {
        var segments: [PrefetchSegment] = []
        segments.reserveCapacity(media.segments.count)
        for segment in media.segments where !segment.isGap && segment.byteRange == nil && isFetchable(segment.uri) {
            segments.append(PrefetchSegment(url: segment.uri, needs: resourcesNeeded(by: segment)))
        }
        return PrefetchRendition(id: url, family: family ?? PrefetchFamily(group: url, title: url),
                                 isLive: media.isLive, segments: segments)
    }

    /// The keys and init section a client fetches over http(s) for `segment`.
    private static func resourcesNeeded(by segment: HLSSegment) -> [PrefetchResource] {
        var needs = segment.keys.compactMap { key in
            key.method == .none ? nil : key.uri.flatMap { isFetchable($0) ? PrefetchResource(url: $0) : nil }
        }
        if let map = segment.map, isFetchable(map.uri) { needs.append(PrefetchResource(url: map.uri, range: map.byteRange?.range)) }
        return needs
    }

    /// A low-latency playlist's parts (EXT-X-PART) as a rendition of their own in its
    /// group: a player near the live edge asks for parts, one further behind for segments.
    package static func hlsParts(_ media: HLSMediaPlaylist, url: String, family: PrefetchFamily?) -> PrefetchRendition? {
        var parts: [PrefetchSegment] = []
        var needs: [PrefetchResource] = []
        func add(_ part: HLSPart) {
            guard !part.isGap, part.byteRange == nil, isFetchable(part.uri) else { return }
            parts.append(PrefetchSegment(url: part.uri, needs: needs))
        }
        for segment in media.segments {
            needs = resourcesNeeded(by: segment)
            segment.parts.forEach(add)
        }
        media.trailingParts.forEach(add)
        guard !parts.isEmpty else { return nil }
        return PrefetchRendition(id: url + "#parts", family: family ?? PrefetchFamily(group: url, title: url),
                                 isLive: media.isLive, segments: parts)
    }

    /// A master's media playlists: variants are one group, each rendition type another.
    package static func families(_ master: HLSMasterPlaylist, url: String) -> [String: PrefetchFamily] {
        var families: [String: PrefetchFamily] = [:]
        for variant in master.variants {
            families[variant.uri] = PrefetchFamily(group: url + "#variants", title: url)
        }
        for rendition in master.renditions {
            guard let uri = rendition.uri else { continue }
            families[uri] = PrefetchFamily(group: url + "#\(rendition.type)", title: url)
        }
        return families
    }

    /// An MPD's representations listing segments by URL; an adaptation set is a group.
    package static func dash(_ manifest: MPDManifest, url: String) -> [PrefetchRendition] {
        var renditions: [PrefetchRendition] = []
        for (p, period) in manifest.periods.enumerated() {
            for (a, set) in period.adaptationSets.enumerated() {
                let family = PrefetchFamily(group: url + "#p\(p)a\(a)", title: url)
                for representation in set.representations {
                    var needs: [PrefetchResource] = []
                    if let initialization = representation.initialization, isFetchable(initialization.url) {
                        needs.append(PrefetchResource(url: initialization.url, range: initialization.range))
                    }
                    let segments = representation.segments.lazy
                        .filter { $0.range == nil && isFetchable($0.url) }
                        .map { PrefetchSegment(url: $0.url, needs: needs) }
                    guard !segments.isEmpty else { continue }
                    renditions.append(PrefetchRendition(id: url + "#p\(p)a\(a)r" + representation.id, family: family,
                                                        isLive: manifest.isDynamic, segments: Array(segments)))
                }
            }
        }
        return renditions
    }

    /// Absolute http(s) URLs only (the parsers leave other schemes as written).
    static func isFetchable(_ uri: String) -> Bool { OriginURL.parse(uri) != nil }
}
