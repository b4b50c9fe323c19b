import CacheHTTP
import CacheIO
import CacheStorage
import CacheUpstream
import Logging

/// Turns client requests into cache reads and origin downloads.
/// Any number of readers share one download of the same bytes. Loop thread only.
package final class Loader {
    package let store: ResourceStore
    package let client: UpstreamClient
    package let policy: LoaderPolicy
    let logger: Logger
    /// The last failure per origin URL, for the API (cleared on demand), bounded.
    private var lastErrors = ErrorRecords()
    // Loop-confined, never accessed overlapping: no dynamic exclusivity check (twice per request).
    @exclusivity(unchecked) var states: [String: ResourceState] = [:]
    private var nextDownloadID = 0
    /// Open client readers (not preloads) of every shard: what preloads wait on (EngineGroup).
    package var gauge = ReaderGauge()
    /// Gzip bodies whose inflate for a rewrite failed, per stored version.
    package let inflateMemo = InflateMemo()
    /// Called when this loader closes the last foreground reader of all shards.
    package var foregroundIdle: (() -> Void)?
    /// Paces downloads only background readers want (rate cap, playback first).
    private(set) lazy var pacer = BackgroundPacer(loop: store.loop) { [unowned self] in self.gauge }
    /// The rate cap of background downloads, shared by the group's loaders.
    package var backgroundRate: RateBucket {
        get { pacer.bucket }
        set { pacer.bucket = newValue }
    }
    /// Origin traffic, counted where it happens.
    @exclusivity(unchecked) package private(set) var counters = EngineCounters()

    package init(store: ResourceStore, client: UpstreamClient, policy: LoaderPolicy = LoaderPolicy(), logger: Logger) {
        self.store = store
        self.client = client
        self.policy = policy
        self.logger = logger
        // An idle entry the store let go of keeps no loading state either.
        store.resourceReleased = { [unowned self] resource in
            if let state = states[resource.key], state.resource === resource, state.downloads.isEmpty {
                states[resource.key] = nil
            }
        }
    }

    /// A reader for `url`, cached under `primary` (or its variant's key); `spec`: the client's
    /// Range, `fields`: what its downloads send on, `request`: for the RFC 9111 rules.
    package func reader(url: OriginURL, storeKey primary: String, spec: ByteRangeSpec?,
                        fields: OriginFields = OriginFields(), background: Bool = false,
                        request: HTTPHeaders = HTTPHeaders()) -> ResourceReader {
        let stored = store.existing(storeKey: primary)
        var storeKey = variantStoreKey(primary: primary, stored: stored, request: request)
        var current = states[storeKey]  // the resource of `storeKey` is keyed by it
        if let shared = current, shared.notShared {
            // A response that may not be shared is never joined: this request gets its own.
            nextDownloadID += 1
            storeKey = store.storeKey(for: storeKey + "\nunshared \(nextDownloadID)")
            current = nil
        }
        // Usually the primary key's resource, already at hand.
        let resource = stored.flatMap { $0.key == storeKey ? $0 : nil } ?? store.resource(storeKey: storeKey, url: url.string)
        let state = current.flatMap { $0.resource === resource ? $0 : nil } ?? {
            let created = ResourceState(resource: resource)
            states[resource.key] = created
            return created
        }()
        state.originURL = url
        dropExpiredLivePlaylist(state)
        resource.users += 1
        resource.touch()
        if !background { gauge.opened() }
        let reader = ResourceReader(loader: self, state: state, spec: spec, fields: fields, background: background,
                                    request: request)
        reader.otherVariantStored = stored != nil && resource !== stored
        return reader
    }

    /// The one check of the cached version that readers of a resource share.
    func validation(for state: ResourceState, headers: HTTPHeaders, request: HTTPHeaders,
                    followsRedirects: Bool = true) -> Download {
        state.validation ?? startDownload(state, .validation, headers: headers, request: request,
                                          followsRedirects: followsRedirects)
    }

    func startDownload(_ state: ResourceState, _ request: Download.Request, headers: HTTPHeaders,
                       request clientHeaders: HTTPHeaders = HTTPHeaders(),
                       followsRedirects: Bool = true, background: Bool = false) -> Download {
        nextDownloadID += 1
        // Redirects are relayed, not followed, exactly in the forward and reverse modes.
        let download = Download(id: nextDownloadID, state: state, request: request, loader: self,
                                clientHeaders: clientHeaders, transparent: !followsRedirects, background: background)
        if case .range(let range) = request {
            // A download already heading into this range stops where this one starts.
            for other in state.downloads where !other.finished { other.truncate(at: range.lowerBound) }
        } else if download.isValidation {
            state.validation = download
        } else {
            state.probe = download
        }
        state.downloads.append(download)
        state.resource.users += 1
        counters.originRequests += 1
        if !background { gauge.downloadStarted() }
        var headers = headers
        headers.add("Range", download.rangeHeader)
        // A strong ETag, else Last-Modified (RFC 9110 §13.1.5): a changed resource then comes
        // back whole (200), never as mixed bytes.
        let metadata = state.resource.metadata
        if case .range = request, let validator = metadata.etag.flatMap({ $0.hasPrefix("W/") ? nil : $0 })
            ?? metadata.lastModified {
            headers.add("If-Range", validator)
        }
        if case .validation = request {
            // A conditional request (RFC 9111 §4.3.1): 304 when unchanged, no body.
            let stored = storedHead(state.resource).headers
            if let etag = stored["ETag"] { headers.add("If-None-Match", etag) }
            if let lastModified = stored["Last-Modified"] { headers.add("If-Modified-Since", lastModified) }
        }
        headers = Intermediary.appendingVia(headers, pseudonym: policy.viaPseudonym)
        guard let url = state.originURL else { preconditionFailure("resource state without URL") }
        logger.debug("fetch", metadata: ["url": "\(url.string)", "range": "\(download.rangeHeader)"])
        download.task = client.get(url, headers: headers, delegate: download, followsRedirects: followsRedirects)
        return download
    }

    /// A live playlist past its window (half its target duration) is checked whatever its freshness says.
    func needsValidation(_ state: ResourceState) -> Bool {
        guard state.headKnown, let interval = liveReuseMilliseconds(state) else { return false }
        guard let validatedAt = state.resource.validatedAt else { return true }
        return store.clock() - validatedAt >= interval
    }

    /// Decides, once the origin described a new resource, whether it is kept.
    func classify(_ state: ResourceState, transparent: Bool = false) {
        let resource = state.resource
        // The query decides; the whole URL is only built for the log.
        var url: String { state.originURL?.string ?? resource.url }
        if HLS.isBlockingReloadRequest(state.originURL?.pathAndQuery ?? resource.url) {
            logger.debug("not caching: a low-latency blocking playlist reload passes through", metadata: ["url": "\(url)"])
            resource.makeTransient()
        } else if !policy.keeps(contentType: resource.metadata.contentType, transparent: transparent) {
            logger.info("not caching: the content type is outside the policy", metadata: [
                "url": "\(url)", "type": "\(resource.metadata.contentType ?? "none")"])
            resource.makeTransient()
        } else if let length = resource.totalLength, length > store.maxBytes {
            logger.info("not keeping: larger than the cache limit; streaming it", metadata: [
                "url": "\(url)", "length": "\(length)", "limit": "\(store.maxBytes)"])
            resource.makeTransient()
        }
    }

    /// A body of unknown length passed the cache limit at `offset`: it is streamed, not kept.
    func tooLargeToKeep(_ state: ResourceState, at offset: Int64) {
        let url = state.originURL?.string ?? state.resource.url
        logger.info("not keeping: a body of unknown length passed the cache limit; streaming it", metadata: [
            "url": "\(url)", "offset": "\(offset)", "limit": "\(store.maxBytes)"])
        state.resource.makeTransient()
    }

    /// Drops the old version's bytes and downloads; readers notice by the generation.
    func versionChanged(_ state: ResourceState, reason: String, except current: Download) {
        let url = state.originURL?.string ?? state.resource.url
        logger.warning("changed at the origin: dropping its cached bytes", metadata: ["url": "\(url)", "change": "\(reason)"])
        state.resource.reset(url: state.resource.url)
        state.headKnown = false
        state.readHorizon = 0  // readers of the old version say nothing of the new one's pace
        for download in state.downloads where download !== current { download.cancel() }
    }

    func leave(_ download: Download) {
        download.interest -= 1
        if download.interest <= 0 && !download.finished && !download.hasWrittenAll {
            logger.debug("cancel unwanted download", metadata: ["range": "\(download.rangeHeader)"])
            download.cancel()
        }
    }

    func downloadFinished(_ download: Download) {
        let state = download.state
        if !download.background { gauge.downloadEnded() }
        state.downloads.removeAll { $0 === download }
        if state.probe === download { state.probe = nil }
        if state.validation === download { state.validation = nil }
        if let failure = download.failure {
            state.forgetHeadIfNothingCached()
            if let code = OriginErrorCode(failure) { counters.originErrors[code, default: 0] += 1 }
            if let url = state.originURL {
                lastErrors.record(failure.description, for: url.string)
                // The one log line of a failed load (the proxy does not log it again).
                switch failure {
                case .originStatus(let status, _, _):
                    logger.info("origin error status", metadata: ["url": "\(url.string)", "status": "\(status)"])
                case .changed:
                    break  // logged by versionChanged
                default:
                    logger.warning("download failed", metadata: ["url": "\(url.string)",
                                                                "range": "\(download.rangeHeader)", "error": "\(failure)"])
                }
            }
        }
        state.resource.users -= 1
        state.resource.flush()
        state.wakeReaders()
        release(state)
    }

    func readerClosed(_ reader: ResourceReader) {
        if !reader.background, gauge.closed() { foregroundIdle?() }
        reader.state.resource.users -= 1
        release(reader.state)
    }

    /// Keeps the resource from eviction until the lease's last reference goes, on any thread.
    func lease(_ state: ResourceState) -> ResourceLease {
        state.resource.leases += 1
        return ResourceLease(state: state, loader: self)
    }

    func leaseEnded(_ state: ResourceState) {
        state.resource.leases -= 1
        release(state)
    }

    /// How many resource states (idle ones included) are kept at most.
    static let idleStatesKept = 4096

    /// Forgets a resource's loading state once nothing uses it (`Resource.users` counts).
    private func release(_ state: ResourceState) {
        let resource = state.resource
        guard !resource.isBusy else { return }
        // A shared cached resource's state stays for its next request (a hit allocates nothing), bounded.
        if !state.notShared, !resource.isRemoved, !resource.isTransient, !resource.holdsNothing,
           states.count <= Self.idleStatesKept {
            return
        }
        // One hash in the usual case: take it out, put back what was not ours.
        let key = resource.key
        if let removed = states.removeValue(forKey: key), removed !== state { states[key] = removed }
    }

    func received(_ count: Int) { counters.bytesFromOrigin &+= UInt64(count) }

    /// The counters with the gauges derived now.
    package var currentCounters: EngineCounters {
        var snapshot = counters
        snapshot.activeDownloads = states.values.reduce(0) { $0 + $1.downloads.count }
        snapshot.evictions = store.evictions
        return snapshot
    }

    /// The last failure recorded for an origin URL, if still remembered.
    package func lastError(for url: String) -> String? { lastErrors.message(for: url) }
    package func clearLastErrors() { lastErrors.removeAll() }
    package func clearLastError(for url: String) { lastErrors.remove(url) }

    /// Cancels every download (shutdown).
    package func cancelAll() {
        pacer.releaseAll()
        for state in states.values {
            for download in state.downloads { download.cancel() }
        }
    }
}
