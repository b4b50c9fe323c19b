// What one preload fetches, in which order, as a value (no sockets, no clock: tested as a table). A plain
// resource: it, or one range. HLS: master → chosen variants → renditions → each media playlist's keys, init
// sections and segments (all or the first N seconds). DASH: every period and adaptation set's chosen
// representations' init, index and media segments (a SegmentBase `sidx` is read first to learn its segments).

import CacheHTTP

/// Which variants of a multivariant playlist a preload fetches.
package enum PreloadVariants: Sendable, Equatable {
    case all
    case one(HLSVariantPreference)
}

package struct PreloadRequest: Sendable, Equatable {
    package var url: String
    /// Bytes of a plain resource (half-open); nil: all of it and what it leads to.
    package var range: Range<Int64>?
    package var variants: PreloadVariants = .all
    /// Seconds of media per media playlist (DASH: per representation and period); nil: all of it.
    package var duration: Double?
    package var pin = false
    /// DASH: only audio and text sets in this language (`MPDPeriod.adaptationSets`).
    package var language: String?
    /// What pins the fetched resources instead of the URL (a download's tag).
    package var pinTag: String?
    /// What holds the fetched resources: nil when they are not pinned.
    package var holder: String? { pinTag ?? (pin ? url : nil) }

    package init(url: String, range: Range<Int64>? = nil, variants: PreloadVariants = .all,
                 duration: Double? = nil, pin: Bool = false, language: String? = nil) {
        self.url = url
        self.range = range
        self.variants = variants
        self.duration = duration
        self.pin = pin
        self.language = language
    }
}

/// One resource (or byte range) a preload fetches.
package struct PreloadItem: Sendable, Equatable {
    package enum Role: Sendable, Equatable {
        /// The URL asked for: a playlist or a plain resource, its body read when small.
        case root
        /// A media playlist (variant or rendition): its body is read and walked.
        case mediaPlaylist
        case segment
        case key
        case initSection
        /// A DASH index segment a player fetches.
        case index
        /// A SegmentBase `sidx` (a byte range): its body is read for the segments.
        case segmentIndex
        /// A DASH segment that may not exist (`MPDRepresentation.trailingSegment`): may fail.
        case trailingSegment
    }
    package var id: Int
    package var url: String
    package var range: Range<Int64>?
    package var role: Role
    /// A transparent client's fields, for an item fetched as its next request would be (a CMCD hint); with
    /// `separateEntry`, kept in that request's entry (`ResourceStore.transparentKey`). nil: a proxy URL's.
    package var clientFields: HTTPHeaders? = nil
    package var separateEntry = false
    /// Cache only, stale or not (a prefetcher reading a playlist a player was just served).
    package var cachedOnly = false

    /// Whether the driver hands the body back (playlists are walked).
    package var wantsBody: Bool { role == .root || role == .mediaPlaylist || role == .segmentIndex }
}

/// Why a preload or a fetch failed; the API makes it an `HTTPCacheError` of the proxy's code.
package enum PreloadFailure: Error, Sendable, Equatable {
    /// An origin or cache failure: the code of `HTTPCacheError.Code` and the reason.
    case fetch(url: String, code: Int32, message: String)
    case playlist(url: String, HLSError)
    /// An MPD (or one of its index segments) that cannot be read.
    case manifest(url: String, DASHError)
    case canceled
    case closed

    package var message: String {
        switch self {
        case .fetch(let url, _, let message): return "\(url): \(message)"
        case .playlist(let url, let error): return "\(url): not a usable playlist (\(error))"
        case .manifest(let url, let error): return "\(url): not a usable DASH manifest (\(error))"
        case .canceled: return "canceled"
        case .closed: return "the cache closed"
        }
    }
}

package struct PreloadCounts: Sendable, Equatable {
    package var segmentsDone = 0
    package var segmentsTotal = 0
    package var resourcesDone = 0
    package var resourcesTotal = 0
    /// Seconds of media whose segments are done.
    package var mediaSecondsDone = 0.0
    /// A live (dynamic) DASH manifest: what was available when it was read, no more.
    package var live = false
    /// HLS estimate of the total: the chosen variants' BANDWIDTH × their media's duration.
    package var estimatedBytes: Int64 = 0
}

package struct PreloadWalker {
    package enum Event: Equatable {
        case start
        /// `body`: the bytes, when the item wanted them and they could be a playlist.
        case fetched(id: Int, body: [UInt8]?, finalURL: String?)
        case fetchFailed(id: Int, PreloadFailure)
        case cancel
        /// Stop for another reason than a cancel (the cache closes).
        case abort(PreloadFailure)
    }

    package enum Action: Equatable {
        case fetch(PreloadItem)
        /// Stop every fetch still running (cancel).
        case stopFetches
        /// The preload is over: nil when everything was fetched, else the first failure.
        case finish(PreloadFailure?)
    }

    package let request: PreloadRequest
    /// How many fetches of this preload run at once (the engine limits all preloads further).
    package let window: Int
    package private(set) var counts = PreloadCounts()
    package private(set) var isFinished = false
    private var queue: [PreloadItem] = []
    private var running: [Int: PreloadItem] = [:]
    private var nextID = 0
    /// (url, range) of every item ever queued: a shared key or init section is fetched once.
    private var seen: Set<String> = []
    /// Segment durations by item id, counted when they are done.
    private var durations: [Int: Double] = [:]
    /// Bits per second of each chosen variant, by its playlist's URL (for `estimatedBytes`).
    private var bandwidths: [String: Int] = [:]
    private var firstFailure: PreloadFailure?
    /// Seconds since 1970 when the walk started: which segments of a live MPD are available.
    private let now: Double

    package init(request: PreloadRequest, window: Int = 2, now: Double = 0) {
        self.request = request
        self.window = max(1, window)
        self.now = now
    }

    package mutating func handle(_ event: Event) -> [Action] {
        guard !isFinished else { return [] }
        switch event {
        case .start:
            enqueue(request.url, range: request.range, role: .root)
        case .fetched(let id, let body, let finalURL):
            guard let item = running.removeValue(forKey: id) else { return [] }
            counts.resourcesDone += 1
            if item.role == .segment {
                counts.segmentsDone += 1
                counts.mediaSecondsDone += durations.removeValue(forKey: id) ?? 0
            }
            if item.role == .segmentIndex, let body, let range = item.range {
                walkIndex(body, of: item, range: range)
            } else if item.wantsBody, item.range == nil, let body {
                walk(body, of: item, playlistURL: finalURL ?? item.url)
            }
        case .fetchFailed(let id, let failure):
            guard let item = running.removeValue(forKey: id) else { return [] }
            counts.resourcesDone += 1
            if item.role != .trailingSegment { noteFailure(failure) }
        case .cancel:
            return stop(.canceled)
        case .abort(let failure):
            return stop(failure)
        }
        return next()
    }

    private mutating func stop(_ failure: PreloadFailure) -> [Action] {
        isFinished = true
        queue.removeAll()
        let hadRunning = !running.isEmpty
        running.removeAll()
        return (hadRunning ? [.stopFetches] : []) + [.finish(failure)]
    }

    /// Fetches to start now, or the end.
    private mutating func next() -> [Action] {
        var actions: [Action] = []
        while running.count < window, !queue.isEmpty {
            let item = queue.removeFirst()
            running[item.id] = item
            actions.append(.fetch(item))
        }
        if running.isEmpty && queue.isEmpty {
            isFinished = true
            actions.append(.finish(firstFailure))
        }
        return actions
    }

    /// Queues `url` (with `range`) once: only http(s) links (not skd://, data:); the root
    /// is fetched whatever it is, to fail with its reason.
    private mutating func enqueue(_ url: String?, range: Range<Int64>? = nil, role: PreloadItem.Role,
                                  duration: Double = 0) {
        guard let url, role == .root || OriginURL.parse(url) != nil else { return }
        let identity = range.map { "\($0.lowerBound)-\($0.upperBound) " } ?? "- "
        guard seen.insert(identity + url).inserted else { return }
        nextID += 1
        let item = PreloadItem(id: nextID, url: url, range: range, role: role)
        if role == .segment {
            counts.segmentsTotal += 1
            durations[item.id] = duration
        }
        counts.resourcesTotal += 1
        // Playlists first: they tell what else there is to fetch.
        let firstMedia = item.wantsBody ? queue.firstIndex(where: { !$0.wantsBody }) : nil
        queue.insert(item, at: firstMedia ?? queue.endIndex)
    }

    /// Queues what a playlist leads to; a root that is no playlist was fetched already.
    private mutating func walk(_ body: [UInt8], of item: PreloadItem, playlistURL: String) {
        if item.role == .root, DASH.startsWithMPDRoot(body) {
            do {
                walk(try MPDManifest.parse(body, manifestURL: playlistURL, now: now))
            } catch {
                noteFailure(.manifest(url: item.url, error))
            }
            return
        }
        guard HLS.startsWithPlaylistHeader(body) else {
            if item.role == .mediaPlaylist { noteFailure(.playlist(url: item.url, .missingHeader)) }
            return
        }
        do {
            switch try HLSPlaylist.parse(body, playlistURL: playlistURL) {
            case .master(let master): walk(master)
            case .media(let media): walk(media, url: item.url)
            }
        } catch {
            noteFailure(.playlist(url: item.url, error))
        }
    }

    private mutating func walk(_ master: HLSMasterPlaylist) {
        let variants = chosen(master.variants, master.variant)
        for key in master.sessionKeys { enqueue(key.uri, role: .key) }
        for variant in variants {
            enqueue(variant.uri, role: .mediaPlaylist)
            bandwidths[variant.uri] = variant.averageBandwidth ?? variant.bandwidth
        }
        for variant in variants {
            for rendition in master.renditions(for: variant) { enqueue(rendition.uri, role: .mediaPlaylist) }
        }
    }

    private mutating func walk(_ media: HLSMediaPlaylist, url: String) {
        var seconds = 0.0
        for segment in media.segments {
            if let limit = request.duration, seconds >= limit { break }
            seconds += segment.duration
            if segment.isGap { continue }
            // Only keys a client fetches over http(s): skd:// and data: are not resources.
            for key in segment.keys where key.method != .none { enqueue(key.uri, role: .key) }
            if let map = segment.map { enqueue(map.uri, range: map.byteRange?.range, role: .initSection) }
            enqueue(segment.uri, range: segment.byteRange?.range, role: .segment, duration: segment.duration)
        }
        if let bits = bandwidths[url] { counts.estimatedBytes += Int64(Double(bits) * seconds / 8) }
    }

    /// The chosen representations of every period (`--variant`, `--language`).
    private mutating func walk(_ manifest: MPDManifest) {
        if manifest.isDynamic { counts.live = true }
        for period in manifest.periods {
            for set in period.adaptationSets(language: request.language) {
                for representation in chosen(set.representations, set.representation) { walk(representation) }
            }
        }
    }

    /// All of `all`, or the one `pick` chooses for `--variant`.
    private func chosen<T>(_ all: [T], _ pick: (HLSVariantPreference) -> T?) -> [T] {
        guard case .one(let preference) = request.variants else { return all }
        return pick(preference).map { [$0] } ?? []
    }

    private mutating func walk(_ representation: MPDRepresentation) {
        if let initialization = representation.initialization {
            enqueue(initialization.url, range: initialization.range, role: .initSection)
        }
        for index in representation.indexes { enqueue(index.url, range: index.range, role: .index) }
        if let index = representation.segmentIndex { enqueue(index.url, range: index.range, role: .segmentIndex) }
        if enqueueSegments(representation.segments) {
            enqueue(representation.trailingSegment?.url, role: .trailingSegment)
        }
    }

    /// Media segments, all or the first `request.duration` seconds; whether all were taken.
    @discardableResult
    private mutating func enqueueSegments(_ segments: [MPDSegment]) -> Bool {
        var seconds = 0.0
        for segment in segments where OriginURL.parse(segment.url) != nil {
            if let limit = request.duration, seconds >= limit { return false }
            seconds += segment.duration
            enqueue(segment.url, range: segment.range, role: .segment, duration: segment.duration)
        }
        return true
    }

    /// A SegmentBase index arrived: its segments are byte ranges of the same file.
    private mutating func walkIndex(_ body: [UInt8], of item: PreloadItem, range: Range<Int64>) {
        do {
            enqueueSegments(try DASH.segments(fromIndex: body, url: item.url, indexRange: range))
        } catch {
            noteFailure(.manifest(url: item.url, error))
        }
    }

    private mutating func noteFailure(_ failure: PreloadFailure) {
        if firstFailure == nil { firstFailure = failure }
    }
}
