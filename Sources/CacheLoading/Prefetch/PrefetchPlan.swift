// What to fetch ahead of players, as a value (no sockets, no clock: tested as a table).
//
// A rendition is prefetched only while played: a request for segment k fetches
// k+1 … k+depth once two requests came in order, else only k+1 (a scrubbing client
// costs one fetch a request). A quality switch in its group or `idleMilliseconds`
// without a request stops it; a seek starts again from there; a failed prefetch pauses
// it until the player is past that segment. A title's unused prefetched segments stay
// under its share of the cache limit. Renditions (LRU) and segments are bounded.

package struct PrefetchItem: Sendable, Hashable {
    package var rendition: String
    package var title: String
    package var resource: PrefetchResource
    /// The segment's position in its rendition; nil for a key or init section.
    package var index: Int?

    package var url: String { resource.url }
    package var isSegment: Bool { index != nil }
}

package struct PrefetchPlan {
    package struct Limits: Sendable, Equatable {
        /// Segments fetched ahead of the player (`--prefetch`); 0: none.
        package var depth: Int
        /// A rendition nobody asked anything of for this long stops.
        package var idleMilliseconds: Int64 = 30_000
        /// Renditions remembered (the least recently used are let go).
        package var maxRenditions = 64
        /// Segments remembered per rendition: a VOD playlist's first ones, a live one's last ones.
        package var maxSegments = 20_000
        /// Bytes a title's unused prefetched segments may hold: its share of the cache limit.
        package var titleShare: Int64 = .max

        package init(depth: Int) { self.depth = depth }
    }

    package enum Event: Equatable {
        /// A master playlist was read: where its media playlists sit.
        case familiesRead([String: PrefetchFamily])
        /// Renditions were read (a media playlist, an MPD's representations), now or again.
        case renditionsRead([PrefetchRendition], now: Int64)
        /// A player asked for `url` (any URL: most are no segment of a known rendition).
        case requested(url: String, now: Int64)
        /// A prefetch ended well; `bytes` it brought into the cache.
        case fetched(PrefetchItem, bytes: Int64)
        case failed(PrefetchItem)
        /// Renditions idle too long stop.
        case tick(now: Int64)
        case limitsChanged(Limits)
    }

    package enum Action: Equatable {
        case fetch(PrefetchItem)
        /// Stop the fetches of this rendition still waiting or running.
        case stop(rendition: String)
    }

    /// Where one rendition's playing stands.
    struct Track {
        var rendition: PrefetchRendition
        var positions: [String: Int] = [:]
        /// The segment a player asked for last; nil while it is not playing.
        var position: Int?
        /// Requests in order so far (each within two segments after the one before).
        var streak = 0
        /// The last segment fetched or being fetched ahead (−1: none).
        var ahead = -1
        var running: Set<String> = []
        /// Keys and init sections fetched (or being) in this run.
        var needsFetched: Set<PrefetchResource> = []
        /// Prefetched segments no player asked for yet, with their bytes.
        var unused: [String: Int64] = [:]
        /// The segment whose prefetch failed: nothing more until the player is past it.
        var pausedAt: Int?
        var lastUsed: Int64

        mutating func index() {
            positions = [:]
            positions.reserveCapacity(rendition.segments.count)
            for (i, segment) in rendition.segments.enumerated() { positions[segment.url] = i }
        }
    }

    package private(set) var limits: Limits
    private(set) var tracks: [String: Track] = [:]
    /// The rendition of each known segment URL.
    private var owners: [String: String] = [:]
    /// Where each media playlist of a read master sits.
    private var families: [String: PrefetchFamily] = [:]
    /// The rendition playing in each group.
    private var playing: [String: String] = [:]
    /// Recent requests no known rendition lists: a player asks for a segment before its playlist is read.
    private var recent: [(url: String, at: Int64)] = []
    static let maxFamilies = 4096
    static let maxRecent = 16

    package init(limits: Limits) { self.limits = limits }

    /// Whether some rendition is playing (the driver's idle timer runs).
    package var isPlaying: Bool { !playing.isEmpty }

    /// Whether `url` is a segment of a known rendition.
    package func knows(_ url: String) -> Bool { owners[url] != nil }

    /// The player already asked for `item`'s segment: it fetches for it, not ahead.
    package func playerReached(_ item: PrefetchItem) -> Bool {
        guard let index = item.index, let position = tracks[item.rendition]?.position else { return false }
        return position >= index
    }

    /// Where a media playlist read at `url` sits, when a master said.
    package func family(of url: String) -> PrefetchFamily? { families[url] }

    package mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .familiesRead(let read):
            if families.count + read.count > Self.maxFamilies { families.removeAll() }
            families.merge(read) { $1 }
            return []
        case .renditionsRead(let read, let now):
            var actions: [Action] = []
            for rendition in read { actions += remember(rendition, now: now) }
            return actions
        case .requested(let url, let now):
            return expire(now: now) + requested(url, now: now)
        case .fetched(let item, let bytes):
            guard var track = tracks[item.rendition], track.running.remove(item.url) != nil else { return [] }
            // Counted unused only if the player is not already past it.
            if let index = item.index, index > (track.position ?? -1) { track.unused[item.url] = bytes }
            tracks[item.rendition] = track
            return []
        case .failed(let item):
            guard var track = tracks[item.rendition], track.running.remove(item.url) != nil else { return [] }
            // Paused, not retried: the player's own request tells whether it is there.
            track.pausedAt = min(track.pausedAt ?? .max, item.index ?? track.ahead)
            tracks[item.rendition] = track
            return []
        case .tick(let now):
            return expire(now: now)
        case .limitsChanged(let new):
            limits = new
            guard new.depth == 0 else { return [] }
            return tracks.keys.sorted().flatMap { stopPlaying($0) }
        }
    }

    private mutating func requested(_ url: String, now: Int64) -> [Action] {
        guard limits.depth > 0 else { return [] }
        guard let id = owners[url], var track = tracks[id], let k = track.positions[url] else {
            recent.append((url, now))
            if recent.count > Self.maxRecent { recent.removeFirst() }
            return []
        }
        var actions: [Action] = []
        let group = track.rendition.family.group
        if let other = playing[group], other != id { actions += stopPlaying(other) }
        playing[group] = id
        track.unused[url] = nil
        track.lastUsed = now
        if let last = track.position, k > last, k - last <= 2 {
            track.streak += 1
        } else if k != track.position {
            // A start or a seek: what runs ahead of the old position is no longer wanted.
            if !track.running.isEmpty {
                actions.append(.stop(rendition: id))
                track.needsFetched = track.needsFetched.filter { !track.running.contains($0.url) }
                track.running.removeAll()
            }
            track.streak = 1
            track.ahead = k
            track.pausedAt = nil
        }
        track.position = k
        track.ahead = max(track.ahead, k)
        // Segments skipped over are not waited for: they no longer count against the title's share.
        track.unused = track.unused.filter { (track.positions[$0.key] ?? -1) > k }
        if let paused = track.pausedAt, k > paused { track.pausedAt = nil }
        actions += fill(&track, id: id)
        tracks[id] = track
        return actions
    }

    /// Fetches up to `depth` segments past the player's (one until two requests came in order).
    private func fill(_ track: inout Track, id: String) -> [Action] {
        guard let k = track.position, track.pausedAt == nil else { return [] }
        let want = track.streak >= 2 ? limits.depth : min(1, limits.depth)
        let last = min(k + want, track.rendition.segments.count - 1)
        var actions: [Action] = []
        while track.ahead < last, unusedBytes(of: track.rendition.family.title, besides: track) < limits.titleShare {
            track.ahead += 1
            let segment = track.rendition.segments[track.ahead]
            let title = track.rendition.family.title
            for need in segment.needs where track.needsFetched.insert(need).inserted {
                actions.append(.fetch(PrefetchItem(rendition: id, title: title, resource: need, index: nil)))
                track.running.insert(need.url)
            }
            guard track.running.insert(segment.url).inserted else { continue }
            actions.append(.fetch(PrefetchItem(rendition: id, title: title, resource: PrefetchResource(url: segment.url),
                                               index: track.ahead)))
        }
        return actions
    }

    /// Prefetched bytes of `title` no player asked for yet (`track` counted as given).
    private func unusedBytes(of title: String, besides track: Track) -> Int64 {
        var total = track.unused.values.reduce(0, +)
        for (id, other) in tracks where other.rendition.family.title == title && id != track.rendition.id {
            total += other.unused.values.reduce(0, +)
        }
        return total
    }

    /// The rendition is no longer played: its fetches stop, its place is forgotten.
    private mutating func stopPlaying(_ id: String) -> [Action] {
        guard let track = tracks[id] else { return [] }
        tracks[id] = Track(rendition: track.rendition, positions: track.positions, lastUsed: track.lastUsed)
        if playing[track.rendition.family.group] == id { playing[track.rendition.family.group] = nil }
        return track.running.isEmpty ? [] : [.stop(rendition: id)]
    }

    private mutating func expire(now: Int64) -> [Action] {
        guard !playing.isEmpty else { return [] }
        var actions: [Action] = []
        for id in playing.values.sorted() where now - (tracks[id]?.lastUsed ?? now) >= limits.idleMilliseconds {
            actions += stopPlaying(id)
        }
        return actions
    }

    private mutating func remember(_ read: PrefetchRendition, now: Int64) -> [Action] {
        var rendition = read
        if rendition.segments.count > limits.maxSegments {
            // A live playlist is played near its end; a VOD one from its start.
            rendition.segments = rendition.isLive ? Array(rendition.segments.suffix(limits.maxSegments))
                : Array(rendition.segments.prefix(limits.maxSegments))
        }
        var actions: [Action] = []
        if var track = tracks[rendition.id] {
            // Read again (a live playlist grew): the player's place by its URL.
            let lastURL = track.position.map { track.rendition.segments[$0].url }
            let aheadURL = track.ahead >= 0 ? track.rendition.segments[track.ahead].url : nil
            forget(track.rendition)
            track.rendition = rendition
            track.index()
            if let lastURL, let k = track.positions[lastURL] {
                track.position = k
                track.ahead = aheadURL.flatMap { track.positions[$0] } ?? k
                // What the new listing holds is worth one more try (paced by the player's reloads).
                track.pausedAt = nil
                actions += fill(&track, id: rendition.id)
                tracks[rendition.id] = track
            } else {
                tracks[rendition.id] = track
                actions += stopPlaying(rendition.id)
            }
        } else {
            var track = Track(rendition: rendition, lastUsed: now)
            track.index()
            tracks[rendition.id] = track
            actions += letGoOfOldest()
        }
        for segment in rendition.segments { owners[segment.url] = rendition.id }
        // Requests that came before the playlist was read count now, in their order.
        if tracks[rendition.id]?.position == nil {
            // Within the idle time only: an old one is not playing now.
            let late = recent.filter { owners[$0.url] == rendition.id && now - $0.at < limits.idleMilliseconds }
            recent.removeAll { owners[$0.url] == rendition.id }
            for (url, at) in late { actions += requested(url, now: at) }
        }
        return actions
    }

    /// Drops `rendition`'s URLs from the owners (those still its own).
    private mutating func forget(_ rendition: PrefetchRendition) {
        for segment in rendition.segments where owners[segment.url] == rendition.id { owners[segment.url] = nil }
    }

    private mutating func letGoOfOldest() -> [Action] {
        guard tracks.count > limits.maxRenditions else { return [] }
        // Not playing first, then the least recently used.
        guard let oldest = tracks.values.min(by: {
            ($0.position == nil ? 0 : 1, $0.lastUsed) < ($1.position == nil ? 0 : 1, $1.lastUsed)
        }) else { return [] }
        let id = oldest.rendition.id
        let actions = stopPlaying(id)
        forget(oldest.rendition)
        tracks[id] = nil
        return actions
    }
}
