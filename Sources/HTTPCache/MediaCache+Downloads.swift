import CacheIO
import CacheLoading

/// Where a download stands.
public enum DownloadState: String, Sendable, Codable, CaseIterable {
    case queued, running, paused, completed, failed, removed
}

/// A download (a title kept for offline use) as the API shows it.
public struct DownloadInfo: Sendable, Equatable {
    public var id: String
    public var name: String
    public var url: String
    /// The selection: HLS variants (all, highest, lowest, a BANDWIDTH), seconds of media, a byte range "A-B".
    public var variant: String?
    public var duration: Double?
    public var range: String?
    public var state: DownloadState
    /// Why it failed: `.tooLarge` when it cannot fit in the cache limit.
    public var failure: HTTPCacheError?
    public var bytesDone: Int64
    /// The total size, an estimate while `totalIsEstimate`; nil while unknown.
    public var bytesTotal: Int64?
    public var totalIsEstimate: Bool
    public var resourcesDone: Int
    public var resourcesTotal: Int
    public var segmentsDone: Int
    public var segmentsTotal: Int

    init(_ record: DownloadRecord) {
        id = record.id
        name = record.name
        url = record.url
        variant = record.variant
        duration = record.duration
        range = record.range
        state = DownloadState(rawValue: record.state.rawValue) ?? .failed
        failure = record.failure
        bytesDone = record.bytesDone
        bytesTotal = record.bytesTotal
        totalIsEstimate = record.totalIsEstimate
        resourcesDone = record.resourcesDone
        resourcesTotal = record.resourcesTotal
        segmentsDone = record.segmentsDone
        segmentsTotal = record.segmentsTotal
    }

    /// Completed, failed or removed: it changes no more by itself.
    public var isOver: Bool { state == .completed || state == .failed || state == .removed }
}

extension MediaCache {
    /// Adds a download of `url` (any file, or an HLS presentation walked as by `preload`) with its
    /// selection, at low priority (`downloadParallel`, `downloadRate`), surviving restarts and
    /// crashes, pinning what it fetches until `removeDownload`. Returns it queued.
    public func addDownload(_ url: String, name: String? = nil, variant: String? = nil, duration: Double? = nil,
                            range: String? = nil) async throws(HTTPCacheError) -> DownloadInfo {
        try downloadCall { $0.add(url: url, name: name, variant: variant, duration: duration, range: range) }
    }

    /// Every download of the folder, oldest first.
    public func downloads() async -> [DownloadInfo] { downloadList() }
    /// One download; nil when there is none of that id.
    public func download(_ id: String) async -> DownloadInfo? { downloadList().first { $0.id == id } }

    /// Pauses a download (its fetches stop; what they brought stays).
    @discardableResult
    public func pauseDownload(_ id: String) async throws(HTTPCacheError) -> DownloadInfo { try downloadCall { $0.pause(id) } }

    /// Resumes a paused or failed download where it stopped.
    @discardableResult
    public func resumeDownload(_ id: String) async throws(HTTPCacheError) -> DownloadInfo { try downloadCall { $0.resume(id) } }

    /// Removes a download and deletes every resource it holds that no other download holds.
    @discardableResult
    public func removeDownload(_ id: String) async throws(HTTPCacheError) -> DownloadInfo { try downloadCall { $0.remove(id) } }

    /// Every change and progress report of any download, from now on, until the cache closes.
    public var downloadEvents: AsyncStream<DownloadInfo> {
        let (stream, continuation) = AsyncStream<DownloadInfo>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let token = subscribeDownloads { continuation.yield($0) } ended: { continuation.finish() }
        continuation.onTermination = { _ in
            if let token { self.unsubscribeDownloads(token) }
        }
        return stream
    }

    /// Waits until download `id` is over (completed, failed or removed) and returns it.
    public func waitForDownload(_ id: String) async throws(HTTPCacheError) -> DownloadInfo {
        let events = downloadEvents
        guard let now = await download(id) else { throw HTTPCacheError(.notFound, "no download \(id)") }
        if now.isOver { return now }
        for await info in events where info.id == id && info.isOver { return info }
        throw HTTPCacheError(.closed, "the cache is closed")
    }

    // MARK: blocking forms (the C API, the CLI)

    package func downloadCall(_ body: @escaping @Sendable (DownloadManager) -> Result<DownloadRecord, HTTPCacheError>)
        throws(HTTPCacheError) -> DownloadInfo {
        DownloadInfo(try downloadRecordCall(body))
    }

    package func downloadRecordCall(_ body: @escaping @Sendable (DownloadManager) -> Result<DownloadRecord, HTTPCacheError>)
        throws(HTTPCacheError) -> DownloadRecord {
        try engines.submitAndWait(0) { body($0.downloads) }.closedIfNil()
    }

    package func downloadRecords() -> [DownloadRecord] { engines.submitAndWait(0) { $0.downloads.records } ?? [] }
    package func downloadList() -> [DownloadInfo] { downloadRecords().map(DownloadInfo.init) }

    package func unsubscribeDownloads(_ token: Int) { _ = engines.run(0) { $0.downloads.unsubscribe(token) } }

    /// Calls `listener` on the first loop with each change until the cache closes, then `ended`.
    @discardableResult
    package func subscribeDownloads(_ listener: @escaping @Sendable (DownloadInfo) -> Void,
                                    ended: @escaping @Sendable () -> Void) -> Int? {
        let token = engines.submitAndWait(0) { engine in
            engine.downloads.onClose(ended)
            return engine.downloads.subscribe { listener(DownloadInfo($0)) }
        }
        if token == nil { ended() }
        return token
    }
}
