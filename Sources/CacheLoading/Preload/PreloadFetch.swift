import CacheIO
import CacheHTTP
import CacheStorage
import CacheUpstream
import Glibc

/// What a fetch reports to: a preload's run, or the prefetcher.
protocol PreloadFetchOwner: AnyObject {
    /// What pins the fetched resources; nil: not pinned.
    var holder: String? { get }
    /// The size the fetch reads (nil: unknown), and how much of it was cached.
    func sizeKnown(_ bytes: Int64?, cached: Int64)
    func bytesFetched(_ count: Int64)
    func fetchEnded(_ fetch: PreloadFetch, _ outcome: Result<[UInt8]?, PreloadFailure>, finalURL: String?)
}

extension PreloadFetchOwner {
    /// By default nothing is pinned (prefetched and hinted entries are ordinary) and progress is unheard.
    var holder: String? { nil }
    func sizeKnown(_ bytes: Int64?, cached: Int64) {}
    func bytesFetched(_ count: Int64) {}
}

/// One item of a preload, on the preloader's loop: read through the engine as a client would (a player
/// wanting the same bytes shares the download). The reading (`PreloadRead`) runs on the loop of the shard
/// owning the item, reporting back through this loop's queue. Loop thread only.
final class PreloadFetch {
    let item: PreloadItem
    private weak var run: (any PreloadFetchOwner)?
    private var local: PreloadRead?
    /// A read on another shard's loop: where it runs, to cancel it there.
    private var remote: (group: EngineGroup, shard: Int, slot: RemoteSlot)?
    private var ended = false
    /// Who waits for the bytes, and so the order fetches get slots in.
    enum Priority: Int, Comparable {
        /// A preload or an offline download: only while no player is served.
        case preload
        /// A segment ahead of a player (`--prefetch`): beside players served from the
        /// cache, not while a player's own origin download runs.
        case prefetch
        /// What a player said it fetches next (CMCD `nor`/`nrr`): before the plan's guesses.
        case hint

        static func < (a: Priority, b: Priority) -> Bool { a.rawValue < b.rawValue }
    }

    var priority = Priority.preload

    init(item: PreloadItem, run: any PreloadFetchOwner) {
        self.item = item
        self.run = run
    }

    /// The read on another loop, set and used only there.
    final class RemoteSlot: @unchecked Sendable {
        var read: PreloadRead?
    }

    /// Called by the preloader when a slot is free.
    func start(_ engine: Engine) {
        let pin = run?.holder
        let item = self.item
        if let group = engine.group, case let shard = group.shard(ofURL: item.url), shard != engine.store.shardIndex {
            let slot = RemoteSlot()
            remote = (group, shard, slot)
            let me = LoopBound(self, loop: engine.loop)
            let reports = PreloadRead.Reports(
                sizeKnown: { size, cached in _ = me.loop.execute { me.value.owner?.sizeKnown(size, cached: cached) } },
                fetched: { count in _ = me.loop.execute { me.value.owner?.bytesFetched(count) } },
                ended: { outcome, finalURL in _ = me.loop.execute { me.value.readEnded(outcome, finalURL: finalURL) } })
            // Its closures only post to this loop: used on the owner's.
            let carried = LoopBound(reports, loop: group.loops[shard])
            let sent = group.run(shard) { owner in
                let read = PreloadRead(item: item, pin: pin, reports: carried.value)
                slot.read = read
                read.start(owner)
            }
            if !sent { readEnded(.failure(.closed), finalURL: nil) }
            return
        }
        let reports = PreloadRead.Reports(sizeKnown: { [weak self] in self?.owner?.sizeKnown($0, cached: $1) },
                                          fetched: { [weak self] in self?.owner?.bytesFetched($0) },
                                          ended: { [weak self] in self?.readEnded($0, finalURL: $1) })
        let read = PreloadRead(item: item, pin: pin, reports: reports)
        local = read
        read.start(engine)
    }

    /// Stops without reporting (the preload was canceled).
    func cancel() {
        ended = true
        local?.cancel()
        local = nil
        if let remote {
            let slot = remote.slot
            remote.group.run(remote.shard) { _ in slot.read?.cancel() }
            self.remote = nil
        }
    }

    /// Who hears of the read's progress: nobody once it ended or was canceled.
    private var owner: (any PreloadFetchOwner)? { ended ? nil : run }

    private func readEnded(_ outcome: Result<[UInt8]?, PreloadFailure>, finalURL: String?) {
        guard !ended else { return }
        ended = true
        local = nil
        remote = nil
        run?.fetchEnded(self, outcome, finalURL: finalURL)
    }
}

/// The reading of one preload item on its shard's loop, keeping playlists' bodies for
/// the walker; reports go to its `PreloadFetch`. Loop thread only.
final class PreloadRead: ResourceReaderDelegate {
    /// Bodies wanted by the walker are read up to this size (playlists are small).
    static let bodyLimit: Int64 = 4 << 20

    struct Reports {
        /// The size read (nil: unknown) and the bytes of it already cached.
        let sizeKnown: (Int64?, _ cached: Int64) -> Void
        let fetched: (Int64) -> Void
        let ended: (Result<[UInt8]?, PreloadFailure>, _ finalURL: String?) -> Void
    }

    let item: PreloadItem
    /// The preload's URL when it pins what it fetches.
    private let pin: String?
    private let reports: Reports
    private weak var engine: Engine?
    private var reader: ResourceReader?
    private var body: [UInt8]?
    private var ended = false
    /// The bytes of the resource this read keeps (set with the head).
    private var wanted: Range<Int64>?
    /// Recorded bytes reported so far (pinning reads: see `reportProgress`).
    private var reportedKept: Int64 = 0

    init(item: PreloadItem, pin: String?, reports: Reports) {
        self.item = item
        self.pin = pin
        self.reports = reports
    }

    func start(_ engine: Engine) {
        guard let url = OriginURL.parse(item.url) else {
            return end(.failure(.fetch(url: item.url, code: HTTPCacheError.Code.invalidArgument.rawValue, message: "not an http(s) URL")))
        }
        self.engine = engine
        let spec = item.range.map { ByteRangeSpec.closed(first: $0.lowerBound, last: $0.upperBound - 1) }
        let reader: ResourceReader
        if let fields = item.clientFields {
            // As the transparent client's own request would go (ProxyExchange): its fields, its entry, redirects its own.
            // Without its range and preconditions, which were about the object that carried the hint.
            let request = UpstreamHeaders.transparent(from: fields)
            reader = engine.reader(url: url, spec: spec, fields: OriginFields(request),
                                   storeKey: Self.storeKey(of: item, engine: engine), background: true, request: request)
            reader.followsRedirects = false
        } else {
            let request = item.cachedOnly ? HTTPHeaders([("Cache-Control", "only-if-cached, max-stale")]) : HTTPHeaders()
            reader = engine.reader(url: url, spec: spec, background: true, request: request)
        }
        self.reader = reader
        reader.delegate = self
        reader.start()
    }

    /// Stops without reporting.
    func cancel() {
        ended = true
        closeReader()
    }

    /// The entry `item` is kept in.
    static func storeKey(of item: PreloadItem, engine: Engine) -> String {
        let primary = engine.storeKey(for: item.url)
        return item.separateEntry ? engine.store.transparentKey(primary: primary) : primary
    }

    func readerHeadReady(_ reader: ResourceReader, _ result: Result<ContentInfo, LoadError>) {
        guard !ended else { return }
        let info: ContentInfo
        do { info = try result.get() } catch { return end(.failure(PreloadFailure(url: item.url, error))) }
        var range = item.range ?? 0..<(info.totalLength ?? Int64.max)
        if let asked = item.range, let total = info.totalLength {
            guard asked.lowerBound < total else {
                return end(.failure(.fetch(url: item.url, code: HTTPCacheError.Code.range.rawValue, message: "range \(asked.lowerBound)-\(asked.upperBound - 1) is outside the \(total) bytes")))
            }
            range = asked.clamped(to: 0..<total)
        }
        // Playlists whole; a DASH segment index as its range (bounded by `collect`).
        if item.role == .segmentIndex || (item.wantsBody && item.range == nil && (info.totalLength ?? 0) <= Self.bodyLimit) {
            body = []
        }
        wanted = range
        // Held from its first byte: a paused or interrupted download keeps what it has.
        holdResource()
        let cached = reader.resource.available.intersection(range).reduce(Int64(0)) { $0 + Int64($1.count) }
        reports.sizeKnown(Int64(range.count) == Int64.max ? nil : Int64(range.count), cached)
        reader.deliver(range)
        pump()
    }

    func readerCanContinue(_ reader: ResourceReader) { pump() }

    func readerReceived(_ reader: ResourceReader, _ bytes: UnsafeRawBufferPointer) -> Bool {
        collect(bytes)
        reportProgress(Int64(bytes.count))
        return true
    }

    /// A pinning read (a download) counts only bytes the metadata on disk records, so
    /// its progress never shows what a crash would lose (issue 35); others count arrivals.
    private func reportProgress(_ count: Int64) {
        guard pin != nil else { return reports.fetched(count) }
        guard let wanted, let resource = reader?.resource, !resource.isTransient else { return }
        let kept = resource.recordedBytes(in: wanted)
        if kept > reportedKept {
            reports.fetched(kept - reportedKept)
            reportedKept = kept
        }
    }

    private func pump() {
        while !ended, let reader {
            switch reader.next() {
            case .file(let file, let range):
                if body != nil { read(file, range) }
                reportProgress(Int64(range.count))
            case .pending:
                return
            case .finished:
                return end(.success(body))
            case .failed(let error):
                return end(.failure(PreloadFailure(url: item.url, error)))
            }
        }
    }

    private func collect(_ bytes: UnsafeRawBufferPointer) {
        guard let count = body?.count else { return }
        // Too big to be a playlist: not walked.
        if Int64(count + bytes.count) > Self.bodyLimit { body = nil } else { body!.append(contentsOf: bytes) }
    }

    private func read(_ file: DataFile, _ range: Range<Int64>) {
        // At most one byte past the limit: enough to tell a body too big to be a playlist.
        guard let bytes = file.read(range.lowerBound..<min(range.upperBound, range.lowerBound + Self.bodyLimit + 1)) else {
            return body = nil
        }
        bytes.withUnsafeBytes { collect($0) }
    }

    private func end(_ outcome: Result<[UInt8]?, PreloadFailure>) {
        guard !ended else { return }
        ended = true
        if case .success = outcome {
            holdResource()
            if pin != nil, let wanted {
                // Flushed now: the download is about to say "completed" and must show its total.
                reader?.resource.flush()
                let whole = wanted.upperBound == Int64.max ? reader?.resource.available.byteCount ?? 0 : Int64(wanted.count)
                if whole > reportedKept { reports.fetched(whole - reportedKept) }
                reportedKept = max(reportedKept, whole)
            }
        }
        // Where redirects led: the walker resolves a playlist's relative URIs against it.
        let finalURL = reader == nil ? nil : OriginURL.parse(item.url).flatMap { engine?.client.redirectTarget(for: $0)?.string }
        closeReader()
        reports.ended(outcome, finalURL)
    }

    private func holdResource() {
        guard let pin, let resource = reader?.resource else { return }
        resource.setPin(PinHolders.adding(pin, to: resource.metadata.pin))
    }

    private func closeReader() {
        reader?.delegate = nil
        reader?.close()
        reader = nil
    }
}

extension PreloadFailure {
    /// The failure of a read, with the code `HTTPCacheError` gives it.
    package init(url: String, _ error: LoadError) {
        self = .fetch(url: url, code: HTTPCacheError(error).code.rawValue, message: error.description)
    }
}
